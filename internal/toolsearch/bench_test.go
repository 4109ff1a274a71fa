package toolsearch

import (
	"context"
	"os"
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

// BenchmarkEval reports, per query set, recall@1 and recall@5 of what
// search_tools answers and the median time of one search: the agent set,
// the person set and the old set on the corpus (273 tools), the old set on issue 19's
// catalogue (twenty server-everything nodes and one filesystem node), and
// the set NERVE_DISCOVERY_QUERIES names, if any.
func BenchmarkEval(b *testing.B) {
	docs := corpus(b)
	sets := []struct {
		name string
		docs []Doc
		qs   []query
	}{
		{"agent-dev", docs, agentQueries(b, "testdata/agent-dev.jsonl")},
		{"person-dev", docs, agentQueries(b, "testdata/person-dev.jsonl")},
		{"old", docs, oldQueries(b)},
		{"old-issue19", catalogue(b), oldQueries(b)},
	}
	if f := os.Getenv("NERVE_DISCOVERY_QUERIES"); f != "" {
		sets = append(sets, struct {
			name string
			docs []Doc
			qs   []query
		}{"file", docs, agentQueries(b, f)})
	}
	for _, set := range sets {
		b.Run(set.name, func(b *testing.B) {
			ix := New(set.docs)
			s := evaluate(ix, set.qs)
			ctx := context.Background()
			var took []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				ix.Find(ctx, set.qs[i%len(set.qs)].Query, nil)
				took = append(took, time.Since(start))
				i++
			}
			slices.Sort(took)
			b.ReportMetric(s.r1(), "recall@1")
			b.ReportMetric(s.r5(), "recall@5")
			b.ReportMetric(float64(took[len(took)/2])/1e6, "p50-ms")
		})
	}
}
