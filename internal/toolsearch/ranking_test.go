package toolsearch

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// without returns the defaults with f applied: a means turned off.
func without(f func(c *config)) config {
	c := defaults
	f(&c)
	return c
}

// first returns the name of the best hit of query, or "".
func firstHit(ix *Index, query string) string {
	hits := ix.Find(context.Background(), query, nil).Hits
	if len(hits) == 0 {
		return ""
	}
	return hits[0].Name
}

// A word of a rarer sense is a synonym when the words' vectors say they
// are used alike: "altitude" is WordNet's "elevation" in its third sense
// only.
func TestRareSenses(t *testing.T) {
	docs := corpus(t)
	const q, want = "altitude", "maps.maps_elevation"
	if got := firstHit(New(docs), q); got != want {
		t.Errorf("%q: %s first, want %s", q, got, want)
	}
	if got := firstHit(newIndex(docs, without(func(c *config) { c.rare = 0 })), q); got == want {
		t.Errorf("%q without rarer senses: %s first, want the test to need them", q, got)
	}
}

// A word of the dictionary is no misspelling: "mount" does not stand for
// "amount".
func TestNoTypoOfAWord(t *testing.T) {
	docs := tools("shop.pay: Pay the amount.", "git.get_repository: Get a repository.")
	meets := func(ix *Index, q, term string) bool {
		return slices.ContainsFunc(ix.matches(qword{stem: q, surface: q}), func(m match) bool { return ix.terms[m.term] == term })
	}
	if ix := New(docs); meets(ix, "mount", "amount") {
		t.Error(`"mount" meets "amount"`)
	}
	if ix := newIndex(docs, without(func(c *config) { c.typos = false })); !meets(ix, "mount", "amount") {
		t.Error(`"mount" does not meet "amount" with typos of words allowed: the test tests nothing`)
	}
	if ix := New(docs); !meets(ix, "reposotory", "repositori") {
		t.Error(`"reposotory" does not meet "repository"`)
	}
}

// "web page" counts once for a tool that says "webpage" and "web" and
// "page": the compound or its words, whichever scores more.
func TestCompoundOnce(t *testing.T) {
	docs := corpus(t)
	const q, want = "drag a card to another column on a web page", "playwright.browser_drag"
	if got := firstHit(New(docs), q); got != want {
		t.Errorf("%q: %s first, want %s", q, got, want)
	}
	if got := firstHit(newIndex(docs, without(func(c *config) { c.either = false })), q); got == want {
		t.Errorf("%q counting both: %s first, want the test to need the rule", q, got)
	}
}

// A query that names a server prefers its tools.
func TestNamedServer(t *testing.T) {
	docs := tools(
		"notion.update_page: Notion | Update page properties such as the status.",
		"notion.get_page: Notion | Retrieve a page.",
		"notion.get_user: Notion | Retrieve a user.",
		"watch.check_status: Check the status of a page for changes.",
		"watch.list_checks: List the checks of a web page.",
	)
	for i := range docs {
		docs[i].Server = &Server{Name: docs[i].Node + "-server"}
	}
	const q = "change the status of a Notion page"
	if got := firstHit(New(docs), q); got != "notion.update_page" {
		t.Errorf("%q: %s first, want notion.update_page", q, got)
	}
	if got := firstHit(newIndex(docs, without(func(c *config) { c.named = 0 })), q); got != "watch.check_status" {
		t.Errorf("%q without server names: %s first, want watch.check_status (the test needs them)", q, got)
	}
	// "page" names no server: the tools of both say it.
	ix := New(docs)
	if id, ok := ix.vocab["page"]; !ok || len(ix.names[id]) > 0 {
		t.Errorf(`"page" names %v, want no server`, ix.names[id])
	}
	if id, ok := ix.vocab["notion"]; !ok || len(ix.names[id]) != 1 {
		t.Errorf(`"notion" names %v, want one server`, ix.names[id])
	}
}

// A question prefers the tools that only read, as their servers annotate
// them or, without an annotation, as the annotated tools whose names share
// their words; a verb of change prefers the others.
func TestIntent(t *testing.T) {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	rw := &mcp.ToolAnnotations{}
	docs := tools(
		"k8s.exec_in_pod: Execute a command in a pod.",
		"k8s.get_pods: Get the pods.",
		"k8s.delete_pod: Delete a pod.",
		"ops.get_status: Get the status.",
		"ops.get_logs: Get the logs.",
		"ops.delete_job: Delete a job.",
		"ops.delete_file: Delete a file.",
	)
	for i, a := range []*mcp.ToolAnnotations{rw, nil, nil, ro, ro, rw, rw} {
		docs[i].Tool.Annotations = a
	}
	ix := New(docs)
	if ix.read[1] < 0.9 || ix.read[2] > 0.1 {
		t.Errorf("read-only: get_pods %.2f, delete_pod %.2f; want them learnt from get_status and delete_job", ix.read[1], ix.read[2])
	}
	const q, want = "what pods are running?", "k8s.get_pods"
	if got := firstHit(ix, q); got != want {
		t.Errorf("%q: %s first, want %s", q, got, want)
	}
	if got := firstHit(newIndex(docs, without(func(c *config) { c.asks = 0 })), q); got == want {
		t.Errorf("%q without intent: %s first, want the test to need it", q, got)
	}
	for q, want := range map[string]bool{
		"what's running?": true, "which pods": true, "How many jobs?": true, "is it up": true,
		"how do I delete a pod": false, "delete the pod": false, "can you list the pods": false,
	} {
		if asks(q) != want {
			t.Errorf("asks(%q) = %v, want %v", q, !want, want)
		}
	}
}
