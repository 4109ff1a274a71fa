package toolsearch

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The discovery evaluation (issue 28): the tools of 25 real MCP servers
// (testdata/corpus.json) and queries written from tasks by people who
// never saw the catalogue, the way an agent sends them
// (testdata/agent-dev.jsonl) and the way a person types them
// (testdata/person-dev.jsonl), plus the 35 queries of issue 19
// (testdata/queries.txt). docs/performance.md records the
// figures; NERVE_DISCOVERY_QUERIES=FILE.jsonl evaluates another set.

// corpus loads testdata/corpus.json as one session: a node per server,
// named as the corpus names it, each tool under node.tool, each server's
// title and instructions beside its tools.
func corpus(tb testing.TB) []Doc {
	tb.Helper()
	data, err := os.ReadFile("testdata/corpus.json")
	if err != nil {
		tb.Fatal(err)
	}
	var c struct {
		Servers []struct {
			Name       string `json:"name"`
			ServerInfo struct {
				Name  string `json:"name"`
				Title string `json:"title"`
			} `json:"serverInfo"`
			Instructions string      `json:"instructions"`
			Tools        []*mcp.Tool `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		tb.Fatal(err)
	}
	var docs []Doc
	for _, s := range c.Servers {
		srv := &Server{Name: s.ServerInfo.Name, Title: s.ServerInfo.Title, Instructions: s.Instructions}
		for _, t := range s.Tools {
			docs = append(docs, Doc{Name: s.Name + "." + t.Name, Node: s.Name, Tool: t, Server: srv})
		}
	}
	return docs
}

// replicate returns docs copied under other node ids until there are at
// least n: the corpus as a session of n tools (issue 28, item 4).
func replicate(docs []Doc, n int) []Doc {
	out := slices.Clone(docs)
	for i := 2; len(out) < n; i++ {
		for _, d := range docs {
			node := fmt.Sprintf("%s%d", d.Node, i)
			out = append(out, Doc{Name: node + "." + d.Tool.Name, Node: node, Tool: d.Tool, Server: d.Server})
			if len(out) == n {
				break
			}
		}
	}
	return out
}

// query is one line of a query set: the words and the tools that answer.
type query struct {
	ID      string   `json:"id"`
	Query   string   `json:"query"`
	Answers []string `json:"answers"`
	// Task is the situation the query was written from.
	Task string `json:"task"`
}

// agentQueries reads a JSON-lines query set (agent-dev.jsonl's format).
// Answers are node.tool.
func agentQueries(tb testing.TB, file string) []query {
	tb.Helper()
	f, err := os.Open(file)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var qs []query
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var q query
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			tb.Fatalf("%s: %v", file, err)
		}
		qs = append(qs, q)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return qs
}

// oldQueries reads testdata/queries.txt: "words | tool tool", where any
// node's copy of a tool answers.
func oldQueries(tb testing.TB) []query {
	tb.Helper()
	data, err := os.ReadFile("testdata/queries.txt")
	if err != nil {
		tb.Fatal(err)
	}
	var qs []query
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		q, answers, ok := strings.Cut(line, "|")
		if !ok {
			tb.Fatalf("queries.txt: %q has no |", line)
		}
		qs = append(qs, query{ID: fmt.Sprint(len(qs) + 1), Query: strings.TrimSpace(q), Answers: strings.Fields(answers)})
	}
	return qs
}

// score is the outcome of a query set on an index.
type score struct {
	n, at1, at5 int
	misses      []string
}

func (s score) r1() float64 { return float64(s.at1) / float64(s.n) }
func (s score) r5() float64 { return float64(s.at5) / float64(s.n) }

func (s score) String() string {
	return fmt.Sprintf("recall@1 %d/%d = %.2f, recall@5 %d/%d = %.2f", s.at1, s.n, s.r1(), s.at5, s.n, s.r5())
}

// evaluate runs qs on ix as search_tools does (Find, five tools). An
// answer with a dot is a node.tool; one without is a tool of any node.
func evaluate(ix *Index, qs []query) score { return evaluateWith(ix, qs, nil) }

// evaluateWith is evaluate in a session whose usage u records, after
// each query, a call of its first right tool (nil: no usage).
func evaluateWith(ix *Index, qs []query, u *Usage) score {
	s := score{n: len(qs)}
	for _, q := range qs {
		hits := ix.Find(context.Background(), q.Query, &Options{Limit: 5, Usage: u}).Hits
		if u != nil {
			u.Called(q.Answers[0])
		}
		right := func(h Hit) bool {
			return slices.ContainsFunc(q.Answers, func(a string) bool {
				if strings.Contains(a, ".") {
					return a == h.Name
				}
				return a == h.Tool.Name
			})
		}
		var got []string
		for _, h := range hits {
			got = append(got, h.Name)
		}
		switch i := slices.IndexFunc(hits, right); {
		case i == 0:
			s.at1++
			s.at5++
		case i > 0:
			s.at5++
			s.misses = append(s.misses, fmt.Sprintf("%s at %d: %q wants %v, got %v", q.ID, i+1, q.Query, q.Answers, got))
		default:
			s.misses = append(s.misses, fmt.Sprintf("%s missed: %q wants %v, got %v", q.ID, q.Query, q.Answers, got))
		}
	}
	return s
}

// TestEval holds the ranking to the floors of issue 28 on the agent set,
// to what it reached on the person set, and of issue 19 on the old set,
// on the whole corpus.
func TestEval(t *testing.T) {
	ix := New(corpus(t))
	for _, c := range []struct {
		name     string
		qs       []query
		min1     float64
		min5     float64
		minCount int
	}{
		{"agent-dev", agentQueries(t, "testdata/agent-dev.jsonl"), 0.60, 0.90, 100},
		{"person-dev", agentQueries(t, "testdata/person-dev.jsonl"), 0.60, 0.85, 100},
		// The held-out sets: written with the dev sets, kept from the
		// engineers who tuned the ranking and measured once it was final
		// (agent 1.00 / 1.00, person 0.78 / 0.85); here so they stay so.
		{"agent-heldout", agentQueries(t, "testdata/agent-heldout.jsonl"), 0.90, 0.97, 40},
		{"person-heldout", agentQueries(t, "testdata/person-heldout.jsonl"), 0.70, 0.80, 40},
		{"old", oldQueries(t), 0, 0.95, 35},
	} {
		s := evaluate(ix, c.qs)
		t.Logf("%s on %d tools: %v", c.name, ix.Len(), s)
		for _, m := range s.misses {
			t.Logf("  %s", m)
		}
		if s.n < c.minCount {
			t.Errorf("%s has %d queries, want at least %d", c.name, s.n, c.minCount)
		}
		if s.r1() < c.min1 || s.r5() < c.min5 {
			t.Errorf("%s: %v, want recall@1 ≥ %.2f and recall@5 ≥ %.2f", c.name, s, c.min1, c.min5)
		}
	}
}

// TestEvalFile evaluates the query set NERVE_DISCOVERY_QUERIES names (a
// JSON-lines file as agent-dev.jsonl) on the corpus; it only reports.
func TestEvalFile(t *testing.T) {
	file := os.Getenv("NERVE_DISCOVERY_QUERIES")
	if file == "" {
		t.Skip("NERVE_DISCOVERY_QUERIES names no query file")
	}
	ix := New(corpus(t))
	s := evaluate(ix, agentQueries(t, file))
	t.Logf("%s on %d tools: %v", file, ix.Len(), s)
	for _, m := range s.misses {
		t.Logf("  %s", m)
	}
}

// TestMeans measures each means of ranking on every set: the figures of
// docs/performance.md. It only reports; run it with -v.
func TestMeans(t *testing.T) {
	if !testing.Verbose() {
		t.Skip("reports only: run with -v")
	}
	person := agentQueries(t, "testdata/person-dev.jsonl")
	agent := agentQueries(t, "testdata/agent-dev.jsonl")
	// The tasks themselves as queries: longer, in the user's words, a
	// harder set that tells the means apart.
	var tasks []query
	for _, q := range agent {
		tasks = append(tasks, query{ID: q.ID, Query: q.Task, Answers: q.Answers})
	}
	old := oldQueries(t)
	docs, small := corpus(t), catalogue(t)
	// with returns the config of the row before with f applied.
	var c config
	with := func(f func(c *config)) config {
		f(&c)
		return c
	}
	for _, m := range []struct {
		name string
		cfg  config
		stem func(string) string
	}{
		{"issue 19's BM25 (own stemmer, no server, no thesaurus)", with(func(c *config) { c.params = true }), legacyStem},
		{"  without parameters", config{}, legacyStem},
		{"Snowball stemmer", with(func(*config) {}), stem},
		{"+ server name and title", with(func(c *config) { c.server = true }), stem},
		{"+ server instructions", with(func(c *config) { c.instruction = wInstructed }), stem},
		{"+ WordNet synonyms", with(func(c *config) { c.synonym = 0.4 }), stem},
		{"+ WordNet derived forms", with(func(c *config) { c.derived = 0.5 }), stem},
		{"+ FOLDOC computing synonyms", with(func(c *config) { c.software = 0.4 }), stem},
		{"+ nearest spelling", with(func(c *config) { c.fuzzy = 0.5 }), stem},
		{"+ abbreviations", with(func(c *config) { c.abbrev = 0.8 }), stem},
		{"+ compounds: issue 28's first round", with(func(c *config) { c.compounds = true }), stem},
		{"+ rarer senses' synonyms near by GloVe (0.2)", with(func(c *config) { c.rare = 0.2 }), stem},
		{"+ derived forms 0.4", with(func(c *config) { c.derived = 0.4 }), stem},
		{"+ a dictionary word is no typo", with(func(c *config) { c.typos = true }), stem},
		{"+ a compound or its words, not both", with(func(c *config) { c.either = true }), stem},
		{"+ a split word's parts count half", with(func(c *config) { c.split = 0.5 }), stem},
		{"+ the server a query names (×1.5)", with(func(c *config) { c.named = 0.5 }), stem},
		{"+ a question prefers read-only tools (0.3)", with(func(c *config) { c.asks = 0.3 }), stem},
		{"+ a verb of change prefers the others (0.2)", with(func(c *config) { c.does = 0.2 }), stem},
	} {
		stemmer = m.stem
		ix := newIndex(docs, m.cfg)
		p, a, ta, o, os := evaluate(ix, person), evaluate(ix, agent), evaluate(ix, tasks), evaluate(ix, old), evaluate(newIndex(small, m.cfg), old)
		t.Logf("%-52s person %.2f/%.2f  agent %.2f/%.2f  tasks %.2f/%.2f  old(273) %.2f/%.2f  old(issue 19) %.2f/%.2f", m.name, p.r1(), p.r5(), a.r1(), a.r5(), ta.r1(), ta.r5(), o.r1(), o.r5(), os.r1(), os.r5())
	}
	stemmer = stem
	if c != defaults {
		t.Errorf("the last row is %+v, want the defaults %+v", c, defaults)
	}
	// Usage: a session that, after each query, called its right tool;
	// then the same session asked the whole set again.
	ix := New(docs)
	for _, set := range []struct {
		name string
		qs   []query
	}{{"person", person}, {"agent", agent}, {"tasks", tasks}} {
		u := NewUsage()
		first := evaluateWith(ix, set.qs, u)
		again := evaluateWith(ix, set.qs, u)
		t.Logf("usage, %s: one pass %.2f/%.2f, the same queries again %.2f/%.2f", set.name, first.r1(), first.r5(), again.r1(), again.r5())
	}
}

// TestCrossValidation checks that the weights of defaults were not
// fitted to the person set's queries: NERVE_DISCOVERY_CV=N draws N
// random weightings of the means, and in each of five folds picks the
// one that ranks best the other four fifths of the person set (recall@1
// plus recall@5, among those that keep agent-dev at 0.92 / 1.00 and the
// old set at 0.95 recall@5), then scores it on the held-out fifth. It
// reports the held-out figures beside those of defaults and of issue
// 28's first round; it only reports (about 10 s per 100 draws).
func TestCrossValidation(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("NERVE_DISCOVERY_CV"))
	if n <= 0 {
		t.Skip("NERVE_DISCOVERY_CV=N sets how many weightings to draw")
	}
	person := agentQueries(t, "testdata/person-dev.jsonl")
	agent := agentQueries(t, "testdata/agent-dev.jsonl")
	old := oldQueries(t)
	docs, small := corpus(t), catalogue(t)
	type run struct {
		cfg   config
		right []int // per person query: 1 first, 5 in the first five, 0 missed
		ok    bool
	}
	measure := func(c config) run {
		ix := newIndex(docs, c)
		r := run{cfg: c}
		for _, q := range person {
			s := evaluate(ix, []query{q})
			r.right = append(r.right, map[[2]int]int{{1, 1}: 1, {0, 1}: 5, {0, 0}: 0}[[2]int{s.at1, s.at5}])
		}
		a, o, o19 := evaluate(ix, agent), evaluate(ix, old), evaluate(newIndex(small, c), old)
		r.ok = a.r1() >= 0.92 && a.r5() >= 1 && o.r5() >= 0.95 && o19.r5() >= 0.95
		return r
	}
	var round1 config
	round1.params, round1.server, round1.instruction = true, true, wInstructed
	round1.synonym, round1.derived, round1.software, round1.fuzzy, round1.abbrev, round1.compounds = 0.4, 0.5, 0.4, 0.5, 0.8, true
	runs := []run{measure(defaults), measure(round1)}
	rnd := rand.New(rand.NewPCG(28, 2))
	pick := func(xs ...float64) float64 { return xs[rnd.IntN(len(xs))] }
	for range n {
		c := defaults
		c.synonym, c.derived, c.rare = pick(0.3, 0.4, 0.5), pick(0.4, 0.5, 0.6), pick(0, 0.1, 0.2, 0.3)
		c.named, c.asks, c.does = pick(0, 0.25, 0.5, 1), pick(0, 0.1, 0.2, 0.3), pick(0, 0.1, 0.2, 0.3)
		c.split, c.typos, c.either = pick(0, 0.5), pick(0, 1) == 1, pick(0, 1) == 1
		runs = append(runs, measure(c))
	}
	sum := func(r run, in func(i int) bool) (at1, at5 int) {
		for i, k := range r.right {
			if in(i) {
				at1 += map[int]int{1: 1}[k]
				at5 += map[int]int{1: 1, 5: 1}[k]
			}
		}
		return at1, at5
	}
	var chosen, def, first [2]int
	for fold := range 5 {
		train := func(i int) bool { return i%5 != fold }
		test := func(i int) bool { return i%5 == fold }
		best, bestV := 0, -1
		for j, r := range runs {
			if a1, a5 := sum(r, train); r.ok && a1+a5 > bestV {
				best, bestV = j, a1+a5
			}
		}
		for k, r := range []run{runs[best], runs[0], runs[1]} {
			a1, a5 := sum(r, test)
			p := []*[2]int{&chosen, &def, &first}[k]
			p[0] += a1
			p[1] += a5
		}
		t.Logf("fold %d: chose %+v", fold+1, runs[best].cfg)
	}
	m := float64(len(person))
	t.Logf("held out, the weighting chosen on the other folds: recall@1 %.2f, recall@5 %.2f", float64(chosen[0])/m, float64(chosen[1])/m)
	t.Logf("held out, defaults: %.2f / %.2f; issue 28's first round: %.2f / %.2f", float64(def[0])/m, float64(def[1])/m, float64(first[0])/m, float64(first[1])/m)
}
