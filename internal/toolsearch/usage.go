package toolsearch

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Usage is what one session did with its tools, for ranking: which tools
// it called, and the words of the searches that came before each call.
// It lives in memory, outlives the catalogue's indexes, and forgets: every
// count halves each HalfLife. Safe for concurrent use; the zero value is
// not ready, use NewUsage.
type Usage struct {
	// mu guards the fields below.
	mu    sync.Mutex
	tools map[string]*use // by Doc.Name
	// recent are the last searches, newest last: a call of one of their
	// hits teaches the tool their words.
	recent []search
}

// use is what Usage knows of one tool.
type use struct {
	calls float64            // decayed count of calls
	words map[string]float64 // decayed weight of each word searched before a call
	at    time.Time          // when calls and words were last decayed
}

type search struct {
	words []string
	hits  []string
	at    time.Time
}

// HalfLife is how long it takes Usage to forget half of what it knows.
const HalfLife = 30 * time.Minute

// Usage's other constants: how many searches, and for how long, a call
// learns from; how much a learnt word adds to a score, and when.
const (
	recentSearches = 3
	recentFor      = 10 * time.Minute
	wLearnt        = 0.5  // a learnt word counts half a description's word
	similar        = 0.67 // the share of a query's words that makes it similar
)

// NewUsage returns an empty Usage.
func NewUsage() *Usage { return &Usage{tools: map[string]*use{}} }

// Called tells u that the session called tool name (Doc.Name: node.tool).
func (u *Usage) Called(name string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := time.Now()
	t := u.tools[name]
	if t == nil {
		t = &use{words: map[string]float64{}, at: now}
		u.tools[name] = t
	}
	t.decay(now)
	t.calls++
	// The newest search that found the tool is the one that led to the
	// call: its words are what the session calls this tool.
	for i := len(u.recent) - 1; i >= 0; i-- {
		s := u.recent[i]
		if now.Sub(s.at) > recentFor || !slices.Contains(s.hits, name) {
			continue
		}
		for _, w := range s.words {
			t.words[w] = min(1, t.words[w]+1)
		}
		break
	}
	if len(u.tools) > 4096 {
		u.forgetLocked(now)
	}
}

// searched notes a search's words and what it found.
func (u *Usage) searched(ws []qword, hits []Hit) {
	s := search{at: time.Now()}
	for _, w := range ws {
		s.words = append(s.words, w.stem)
	}
	for _, h := range hits {
		s.hits = append(s.hits, h.Name)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.recent = append(u.recent, s)
	if len(u.recent) > recentSearches {
		u.recent = u.recent[len(u.recent)-recentSearches:]
	}
}

// boost raises the scores of the tools the session called after a
// search with similar words: two thirds of the query's words (by
// weight) were searched before the tool was called. Each such word counts
// as half a word of the tool's description. Calls alone raise nothing: a
// session that created an issue may now want to comment on one.
func (u *Usage) boost(ix *Index, ws []qword, scores []float32) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.tools) == 0 || len(ws) == 0 {
		return
	}
	now := time.Now()
	for i, d := range ix.docs {
		t := u.tools[d.Name]
		if t == nil || len(t.words) == 0 {
			continue
		}
		t.decay(now)
		var learnt float32
		var covered float64
		for _, w := range ws {
			x := t.words[w.stem]
			if x == 0 {
				continue
			}
			covered += x
			df := 0
			if id, ok := ix.vocab[w.stem]; ok {
				df = len(ix.post[id])
			}
			learnt += float32(x) * wLearnt * idf(len(ix.docs), df)
		}
		if covered/float64(len(ws)) >= similar {
			scores[i] += learnt
		}
	}
}

// decay brings t's counts to now.
func (t *use) decay(now time.Time) {
	f := math.Exp2(-now.Sub(t.at).Seconds() / HalfLife.Seconds())
	t.at = now
	if f >= 1 {
		return
	}
	t.calls *= f
	for w, x := range t.words {
		if x *= f; x < 0.01 {
			delete(t.words, w)
		} else {
			t.words[w] = x
		}
	}
}

// forgetLocked drops the tools whose counts have all but faded.
func (u *Usage) forgetLocked(now time.Time) {
	for name, t := range u.tools {
		t.decay(now)
		if t.calls < 0.01 && len(t.words) == 0 {
			delete(u.tools, name)
		}
	}
}
