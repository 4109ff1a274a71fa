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

func TestTokens(t *testing.T) {
	for in, want := range map[string][]string{
		"fs.read_text_file":            {"fs", "read", "text", "file"},
		"readTextFile":                 {"read", "text", "file"},
		"HTTPServer get-sum":           {"http", "server", "get", "sum"},
		"Read the files, reading them": {"read", "file", "read", "them"},
		"directories":                  {"directori"},
		"created creating create":      {"creat", "creat", "creat"},
		"base64 MIME":                  {"base64", "mime"},
		"how can I list a PR's files?": {"list", "pr", "file"},
		"what's on it? you've, we’re":  {},
		"don't delete; it won't":       {"delet"},
		"68% of our goal":              {"68", "percent", "goal"},
		"":                             nil,
	} {
		if got := Tokens(in); !slices.Equal(got, want) {
			t.Errorf("Tokens(%q) = %q, want %q", in, got, want)
		}
	}
}

// catalogue loads the tool lists in testdata as the session of the
// benchmark: twenty server-everything nodes ev01…ev20 and one
// server-filesystem node fs.
func catalogue(t testing.TB) []Doc {
	t.Helper()
	load := func(file string) []*mcp.Tool {
		data, err := os.ReadFile("testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		var l struct{ Tools []*mcp.Tool }
		if err := json.Unmarshal(data, &l); err != nil {
			t.Fatal(err)
		}
		return l.Tools
	}
	var docs []Doc
	for i := 1; i <= 20; i++ {
		id := fmt.Sprintf("ev%02d", i)
		for _, tl := range load("server-everything.json") {
			docs = append(docs, Doc{Name: id + "." + tl.Name, Node: id, Tool: tl})
		}
	}
	for _, tl := range load("server-filesystem.json") {
		docs = append(docs, Doc{Name: "fs." + tl.Name, Node: "fs", Tool: tl})
	}
	return docs
}

// TestRecallAt5 runs the fixed query set (testdata/queries.txt, written
// from the tools' descriptions before the ranking) and needs a right tool
// among the first five hits for at least 90% of the queries (issue 19,
// item 4).
func TestRecallAt5(t *testing.T) {
	ix := New(catalogue(t))
	f, err := os.Open("testdata/queries.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n, found int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		q, answers, ok := strings.Cut(line, "|")
		if !ok {
			t.Fatalf("queries.txt: %q has no |", line)
		}
		want := strings.Fields(answers)
		n++
		hits := ix.Find(context.Background(), q, nil).Hits
		var got []string
		hit := false
		for _, h := range hits {
			got = append(got, h.Name)
			if slices.Contains(want, h.Tool.Name) {
				hit = true
			}
		}
		if hit {
			found++
		} else {
			t.Logf("miss: %q wants %v, got %v", strings.TrimSpace(q), want, got)
		}
	}
	if n < 30 {
		t.Fatalf("queries.txt has %d queries, want at least 30", n)
	}
	recall := float64(found) / float64(n)
	t.Logf("recall@5 = %d/%d = %.3f over %d tools", found, n, recall, ix.Len())
	if recall < 0.9 {
		t.Errorf("recall@5 = %.3f, want ≥ 0.9", recall)
	}
}

func TestSearch(t *testing.T) {
	ix := New(catalogue(t))
	ctx := context.Background()
	hits := ix.Find(ctx, "read a text file", nil).Hits
	if len(hits) == 0 || hits[0].Name != "fs.read_text_file" {
		t.Errorf("read a text file: %v, want fs.read_text_file first", hits)
	}
	if got := ix.Find(ctx, "echo", &Options{Limit: 3}).Hits; len(got) != 3 || got[0].Name != "ev01.echo" {
		t.Errorf("echo: %v, want three, ev01.echo first (ties in name order)", got)
	}
}

func BenchmarkSearch(b *testing.B) {
	ix := New(catalogue(b))
	for b.Loop() {
		ix.Find(context.Background(), "list the files in a directory", nil)
	}
}

func BenchmarkIndex(b *testing.B) {
	docs := catalogue(b)
	for b.Loop() {
		New(docs)
	}
}
