package session

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/toolsearch"
	"github.com/nerve-dev/nerve/pkg/node"
)

// searcher is the session's one tool index (issue 28): search_tools of
// its MCP server, its llm nodes' discovery, `nerve tools --search` and
// the Commander's @? all rank with it. It is built on the first search
// after the catalogue changed — a node added, removed, started or stopped
// with other tools, a tool list changed — and never for a call.
type searcher struct {
	usageOnce sync.Once
	usage     *toolsearch.Usage

	// mu guards the fields below; a search waits while another builds.
	mu      sync.Mutex
	entries []node.ToolEntry // what ix was built from
	ix      *toolsearch.Index
	ixEmb   toolsearch.Embedder // the embedder ix was built with
	builds  int
	embKey  string // the embeddings endpoint's settings emb was made with
	embAt   time.Time
	emb     toolsearch.Embedder
	note    string // the last search's note, logged when it changes
}

// usageOf returns the session's usage, made on first use.
func (s *Session) usageOf() *toolsearch.Usage {
	s.search.usageOnce.Do(func() { s.search.usage = toolsearch.NewUsage() })
	return s.search.usage
}

// SearchTools ranks the session's tools for query (toolsearch.Find) with
// the session's usage; o may set a limit and a filter. Like every listing
// it waits for no node (Toolset).
func (s *Session) SearchTools(ctx context.Context, query string, o *toolsearch.Options) toolsearch.Result {
	var opts toolsearch.Options
	if o != nil {
		opts = *o
	}
	opts.Usage = s.usageOf()
	r := s.SearchIndex(ctx).Find(ctx, query, &opts)
	ss := &s.search
	ss.mu.Lock()
	changed := r.Note != ss.note
	ss.note = r.Note
	ss.mu.Unlock()
	if changed && r.Note != "" {
		// Once per new trouble, not per search.
		s.log.Warn("tool search: the embeddings endpoint failed; ranking by words alone", zap.String("error", r.Note))
	}
	return r
}

// SearchIndex returns the index of the session's current tools, built
// if the catalogue changed since the last one.
func (s *Session) SearchIndex(ctx context.Context) *toolsearch.Index {
	entries := s.Toolset(ctx).Tools()
	emb := s.embedder()
	ss := &s.search
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.ix != nil && ss.ixEmb == emb && sameTools(ss.entries, entries) {
		return ss.ix
	}
	docs := make([]toolsearch.Doc, len(entries))
	servers := map[string]*toolsearch.Server{}
	for i, e := range entries {
		srv, ok := servers[e.Node]
		if !ok {
			srv = s.serverOf(e.Node)
			servers[e.Node] = srv
		}
		docs[i] = toolsearch.Doc{Name: e.Qualified, Node: e.Node, Tool: e.Tool, Server: srv}
	}
	ss.ix = toolsearch.NewWith(docs, &toolsearch.IndexOptions{Embedder: emb})
	ss.entries, ss.ixEmb = entries, emb
	ss.builds++
	return ss.ix
}

// serverOf is what node id's MCP server said of itself, from its Info
// (nil for a node that is not an MCP server).
func (s *Session) serverOf(id string) *toolsearch.Server {
	info, err := s.Info(id)
	if err != nil {
		return nil
	}
	str := func(k string) string { v, _ := info.Details[k].(string); return v }
	srv := &toolsearch.Server{Name: str("server_name"), Title: str("server_title"), Instructions: str("instructions")}
	if *srv == (toolsearch.Server{}) {
		return nil
	}
	return srv
}

// embCheck is how often a search reads the embeddings settings again.
const embCheck = 10 * time.Second

// embedder returns the embeddings endpoint the environment configures
// (the private env file, then the daemon's), nil for none; the same
// value while the settings stay the same, so its kept vectors serve the
// next catalogue.
func (s *Session) embedder() toolsearch.Embedder {
	ss := &s.search
	ss.mu.Lock()
	if !ss.embAt.IsZero() && time.Since(ss.embAt) < embCheck {
		defer ss.mu.Unlock()
		return ss.emb
	}
	ss.mu.Unlock()
	vars := map[string]string{}
	if s.extraEnv != nil {
		env, _ := s.extraEnv()
		for _, kv := range env {
			if k, v, ok := strings.Cut(kv, "="); ok {
				vars[k] = v
			}
		}
	}
	getenv := func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	key := getenv(toolsearch.EnvEmbeddingsURL) + "\x00" + getenv(toolsearch.EnvEmbeddingsModel) + "\x00" + getenv(toolsearch.EnvEmbeddingsKey)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.embAt = time.Now()
	if key != ss.embKey || ss.embKey == "" {
		ss.embKey = key
		ss.emb = toolsearch.EmbedderFromEnv(getenv)
	}
	return ss.emb
}

// sameTools reports whether two tool lists index alike: the same names
// in the same order, each tool the same or equal in what is indexed. A
// lazy node that starts lists its catalogue's tools anew: equal, not the
// same pointers.
func sameTools(a, b []node.ToolEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Qualified != y.Qualified {
			return false
		}
		if x.Tool == y.Tool {
			continue
		}
		if x.Tool.Title != y.Tool.Title || x.Tool.Description != y.Tool.Description || !sameJSON(x.Tool.InputSchema, y.Tool.InputSchema) {
			return false
		}
	}
	return true
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
