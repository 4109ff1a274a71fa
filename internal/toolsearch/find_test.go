package toolsearch

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
)

func names(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Name)
	}
	return out
}

// A search answers with the nearest tools, and says so, when no tool
// shares a word with the query (issue 28: one query of the independent
// evaluation came back empty).
func TestFindNeverEmpty(t *testing.T) {
	ix := New(corpus(t))
	ctx := context.Background()
	r := ix.Find(ctx, "zxqv", nil)
	if !r.Nearest || len(r.Hits) != DefaultLimit || r.Of != ix.Len() {
		t.Fatalf("zxqv: nearest %v, %d hits of %d, want the %d nearest of %d", r.Nearest, len(r.Hits), r.Of, DefaultLimit, ix.Len())
	}
	if d := r.Describe("zxqv"); !strings.Contains(d, "no tool matches") {
		t.Errorf("Describe = %q, want it to say no tool matches", d)
	}
	// Glued and misspelt: no word of it is a word of the tools, but its
	// letters are.
	r = ix.Find(ctx, "redis_setvalue", &Options{Limit: 3})
	if !slices.Contains(names(r.Hits), "redis.set") {
		t.Errorf("redis_setvalue: %v (nearest %v), want redis.set among them", names(r.Hits), r.Nearest)
	}
	r = ix.Find(ctx, "read a text file", nil)
	if r.Nearest || len(r.Hits) == 0 || r.Hits[0].Name != "fs.read_text_file" {
		t.Errorf("read a text file: %v (nearest %v), want fs.read_text_file first, matched", names(r.Hits), r.Nearest)
	}
	// Allow limits what is searched and found; nothing allowed, nothing
	// found.
	onlyGitLab := func(d *Doc) bool { return d.Node == "gitlab" }
	r = ix.Find(ctx, "create an issue", &Options{Allow: onlyGitLab})
	if len(r.Hits) == 0 || r.Hits[0].Name != "gitlab.create_issue" || r.Of != 9 {
		t.Errorf("create an issue in gitlab only: %v of %d, want gitlab.create_issue first of 9", names(r.Hits), r.Of)
	}
	for _, h := range r.Hits {
		if h.Node != "gitlab" {
			t.Errorf("Allow let %s through", h.Name)
		}
	}
	if r = ix.Find(ctx, "create an issue", &Options{Allow: func(*Doc) bool { return false }}); len(r.Hits) != 0 || r.Of != 0 {
		t.Errorf("nothing allowed: %v of %d", names(r.Hits), r.Of)
	}
}

// A tool the session called after a search ranks first when it searches
// with the same words again; a call alone does not raise a tool for other
// words.
func TestUsage(t *testing.T) {
	ix := New(corpus(t))
	ctx := context.Background()
	const q = "add a comment to a Notion page"
	want := "notion.API-create-a-comment"
	u := NewUsage()
	first := ix.Find(ctx, q, &Options{Usage: u, Limit: 10})
	i := slices.Index(names(first.Hits), want)
	if i <= 0 {
		t.Fatalf("%q: %v, want %s found but not first (the test needs a tool usage can raise)", q, names(first.Hits), want)
	}
	u.Called(want)
	if again := ix.Find(ctx, q, &Options{Usage: u}); again.Hits[0].Name != want {
		t.Errorf("%q after calling %s: %v, want it first", q, want, names(again.Hits))
	}
	other := ix.Find(ctx, "take a screenshot of the page", &Options{Usage: u})
	if slices.Contains(names(other.Hits), want) {
		t.Errorf("take a screenshot: %v, want no %s (called, but for other words)", names(other.Hits), want)
	}
}

// concepts are the fake embedding model's dimensions: words of one
// meaning share one.
var concepts = [][]string{
	{"deploy", "rollout", "release"},
	{"file", "files", "document"},
	{"mail", "email", "letter"},
}

// fakeEmbed is a model that knows the concepts: a text's vector counts
// the words of each.
func fakeEmbed(text string) []float32 {
	v := make([]float32, len(concepts)+1)
	v[len(concepts)] = 0.01 // no text is the zero vector
	for _, w := range strings.Fields(strings.ToLower(text)) {
		for i, c := range concepts {
			if slices.Contains(c, strings.Trim(w, ".,:_")) {
				v[i]++
			}
		}
	}
	return v
}

func tools(specs ...string) []Doc {
	var docs []Doc
	for _, s := range specs {
		name, desc, _ := strings.Cut(s, ": ")
		node, tool, _ := strings.Cut(name, ".")
		docs = append(docs, Doc{Name: name, Node: node, Tool: &mcp.Tool{Name: tool, Description: desc}})
	}
	return docs
}

// An embeddings endpoint the user configures is fused with the lexical
// ranking, embeds the tools once, and its failure leaves the lexical
// ranking with a note.
func TestEmbeddings(t *testing.T) {
	srv := llmserver.StartEmbeddings(fakeEmbed)
	defer srv.Close()
	emb := EmbedderFromEnv(func(k string) string {
		return map[string]string{EnvEmbeddingsURL: srv.URL, EnvEmbeddingsModel: "fake-embed"}[k]
	})
	docs := tools("ops.deploy_service: Deploy a service to production.",
		"fs.list_files: List the files of a folder.",
		"mail.send: Send an email.")
	ctx := context.Background()
	lexical := New(docs).Find(ctx, "rollout please", nil)
	if !lexical.Nearest {
		t.Fatalf("rollout please, lexical: %v matched; the test needs a query no tool's words match", names(lexical.Hits))
	}
	ix := NewWith(docs, &IndexOptions{Embedder: emb})
	r := ix.Find(ctx, "rollout please", nil)
	if r.Nearest || len(r.Hits) == 0 || r.Hits[0].Name != "ops.deploy_service" || r.Note != "" {
		t.Fatalf("rollout please, with embeddings: %v (nearest %v, note %q), want ops.deploy_service first", names(r.Hits), r.Nearest, r.Note)
	}
	if r := ix.Find(ctx, "send an email", nil); r.Hits[0].Name != "mail.send" {
		t.Errorf("send an email: %v, want mail.send first", names(r.Hits))
	}
	n, inputs := srv.Requests()
	if n != 3 || len(inputs) != 5 || srv.Models()[0] != "fake-embed" {
		t.Errorf("%d requests embedding %q with %v, want 3: the tools once, then each query", n, inputs, srv.Models())
	}
	// A new catalogue with the same tools, asked a query already asked,
	// sends nothing: the vectors are kept.
	NewWith(docs, &IndexOptions{Embedder: emb}).Find(ctx, "rollout please", nil)
	if n, inputs := srv.Requests(); n != 3 || len(inputs) != 5 {
		t.Errorf("a new index of the same tools: %d requests, %d texts, want 3 and 5 (the vectors kept)", n, len(inputs))
	}
	srv.Fail(http.StatusInternalServerError)
	r = NewWith(tools("ops.deploy_service: Deploy a service.", "mail.send: Send a letter."), &IndexOptions{Embedder: emb}).Find(ctx, "deploy", nil)
	if len(r.Hits) == 0 || r.Hits[0].Name != "ops.deploy_service" || !strings.Contains(r.Note, "500") {
		t.Errorf("endpoint failing: %v, note %q, want the lexical ranking and a note with the status", names(r.Hits), r.Note)
	}
}
