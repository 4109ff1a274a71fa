package toolsearch

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"
)

// The cost of discovery at 1,000 tools (issue 28, item 4): the corpus
// replicated under other node ids, searched with the agent set's queries.
// docs/performance.md records the figures:
//
//	go test ./internal/toolsearch -run '^$' -bench . -benchmem

// BenchmarkSearch1000 reports the mean and the median (p50-ms) of one
// search over 1,000 tools.
func BenchmarkSearch1000(b *testing.B) {
	ix := New(replicate(corpus(b), 1000))
	qs := agentQueries(b, "testdata/agent-dev.jsonl")
	ctx := context.Background()
	ix.Find(ctx, "warm up the word lists", nil)
	var took []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		ix.Find(ctx, qs[i%len(qs)].Query, nil)
		took = append(took, time.Since(start))
		i++
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2])/1e6, "p50-ms")
}

// BenchmarkIndex1000 reports the time to build the index of 1,000 tools
// and the heap it keeps (index-MB), and the heap the word lists keep once
// read (words-MB): what a daemon pays per catalogue.
func BenchmarkIndex1000(b *testing.B) {
	docs := replicate(corpus(b), 1000)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	lists := []*lexicon{{text: wordnetText}, {text: softwareText}}
	for _, l := range lists {
		l.entry("file")
	}
	words := heap() - before
	runtime.KeepAlive(lists)
	var ix *Index
	for b.Loop() {
		ix = New(docs)
	}
	ix = nil
	before = heap()
	ix = New(docs)
	kept := heap() - before
	runtime.KeepAlive(ix)
	b.ReportMetric(float64(kept)/(1<<20), "index-MB")
	b.ReportMetric(float64(words)/(1<<20), "words-MB")
}
