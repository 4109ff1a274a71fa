package toolsearch

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The discovery evaluation (issue 28): the tools of 25 real MCP servers
// (testdata/corpus.json) and queries written from tasks by someone who
// never saw the catalogue (testdata/agent-dev.jsonl), plus the 35 queries
// of issue 19 (testdata/queries.txt). docs/performance.md records the
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

// TestEval holds the ranking to the floors of issue 28 on the agent set
// and of issue 19 on the old set, on the whole corpus.
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
	agent := agentQueries(t, "testdata/agent-dev.jsonl")
	// The tasks themselves as queries: longer, in the user's words, a
	// harder set that tells the means apart.
	var tasks []query
	for _, q := range agent {
		tasks = append(tasks, query{ID: q.ID, Query: q.Task, Answers: q.Answers})
	}
	old := oldQueries(t)
	docs, small := corpus(t), catalogue(t)
	none := config{}
	for _, m := range []struct {
		name string
		cfg  config
		stem func(string) string
	}{
		{"issue 19's BM25 (own stemmer, no server, no thesaurus)", config{params: true}, legacyStem},
		{"  without parameters", none, legacyStem},
		{"Snowball stemmer", config{params: true}, stem},
		{"+ server name and title", config{params: true, server: true}, stem},
		{"+ server instructions", config{params: true, server: true, instruction: wInstructed}, stem},
		{"+ WordNet synonyms", config{params: true, server: true, instruction: wInstructed, synonym: defaults.synonym}, stem},
		{"+ WordNet derived forms", config{params: true, server: true, instruction: wInstructed, synonym: defaults.synonym, derived: defaults.derived}, stem},
		{"+ FOLDOC computing synonyms", config{params: true, server: true, instruction: wInstructed, synonym: defaults.synonym, derived: defaults.derived, software: defaults.software}, stem},
		{"+ nearest spelling", config{params: true, server: true, instruction: wInstructed, synonym: defaults.synonym, derived: defaults.derived, software: defaults.software, fuzzy: defaults.fuzzy}, stem},
		{"+ abbreviations", config{params: true, server: true, instruction: wInstructed, synonym: defaults.synonym, derived: defaults.derived, software: defaults.software, fuzzy: defaults.fuzzy, abbrev: defaults.abbrev}, stem},
		{"+ compounds", defaults, stem},
	} {
		stemmer = m.stem
		ix := newIndex(docs, m.cfg)
		a, ta, o, os := evaluate(ix, agent), evaluate(ix, tasks), evaluate(ix, old), evaluate(newIndex(small, m.cfg), old)
		t.Logf("%-58s agent %.2f/%.2f  tasks %.2f/%.2f  old(273) %.2f/%.2f  old(issue 19) %.2f/%.2f", m.name, a.r1(), a.r5(), ta.r1(), ta.r5(), o.r1(), o.r5(), os.r1(), os.r5())
	}
	stemmer = stem
	// Usage: a session that, after each query, called its right tool;
	// then the same session asked the whole set again.
	ix := New(docs)
	for _, set := range []struct {
		name string
		qs   []query
	}{{"agent", agent}, {"tasks", tasks}} {
		u := NewUsage()
		first := evaluateWith(ix, set.qs, u)
		again := evaluateWith(ix, set.qs, u)
		t.Logf("usage, %s: one pass %.2f/%.2f, the same queries again %.2f/%.2f", set.name, first.r1(), first.r5(), again.r1(), again.r5())
	}
}
