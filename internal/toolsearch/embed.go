package toolsearch

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Embedder turns texts into vectors: an embeddings model the user runs
// (Ollama, an OpenAI-compatible service). Never required: without one,
// or when it fails, the ranking is lexical.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// The environment variables that configure the embeddings endpoint (the
// daemon's, or nerve's private env file: `nerve env set`).
const (
	EnvEmbeddingsURL   = "NERVE_EMBEDDINGS_URL"   // e.g. http://127.0.0.1:11434/v1
	EnvEmbeddingsModel = "NERVE_EMBEDDINGS_MODEL" // e.g. nomic-embed-text
	EnvEmbeddingsKey   = "NERVE_EMBEDDINGS_KEY"   // sent as a bearer token, if set
)

// EmbedderFromEnv returns the embeddings endpoint getenv configures, or
// nil when NERVE_EMBEDDINGS_URL is unset.
func EmbedderFromEnv(getenv func(string) string) Embedder {
	u := strings.TrimSpace(getenv(EnvEmbeddingsURL))
	if u == "" {
		return nil
	}
	return &OpenAIEmbedder{URL: u, Model: getenv(EnvEmbeddingsModel), Key: getenv(EnvEmbeddingsKey)}
}

// OpenAIEmbedder calls an OpenAI-compatible embeddings endpoint
// (POST URL/embeddings, {"model", "input": [texts]}). It keeps the
// vectors it was given, so a new catalogue embeds only its new tools.
type OpenAIEmbedder struct {
	// URL is the API's base (".../v1") or the endpoint itself
	// (".../v1/embeddings").
	URL   string
	Model string
	Key   string
	// Client defaults to one with a 30 s timeout.
	Client *http.Client

	// mu guards cache.
	mu    sync.Mutex
	cache map[string][]float32
}

// embedBatch is how many texts one request carries.
const embedBatch = 64

// Embed returns a vector per text.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var todo []int
	e.mu.Lock()
	for i, t := range texts {
		if v, ok := e.cache[t]; ok {
			out[i] = v
		} else {
			todo = append(todo, i)
		}
	}
	e.mu.Unlock()
	for start := 0; start < len(todo); start += embedBatch {
		batch := todo[start:min(start+embedBatch, len(todo))]
		in := make([]string, len(batch))
		for j, i := range batch {
			in[j] = texts[i]
		}
		vs, err := e.request(ctx, in)
		if err != nil {
			return nil, err
		}
		e.mu.Lock()
		if e.cache == nil || len(e.cache) > 20000 {
			e.cache = map[string][]float32{}
		}
		for j, i := range batch {
			out[i] = vs[j]
			e.cache[texts[i]] = vs[j]
		}
		e.mu.Unlock()
	}
	return out, nil
}

func (e *OpenAIEmbedder) request(ctx context.Context, texts []string) ([][]float32, error) {
	url := strings.TrimRight(e.URL, "/")
	if !strings.HasSuffix(url, "/embeddings") {
		url += "/embeddings"
	}
	body, err := json.Marshal(map[string]any{"model": e.Model, "input": texts})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embeddings endpoint %q: %w (set %s to the API's base URL, e.g. http://127.0.0.1:11434/v1)", e.URL, err, EnvEmbeddingsURL)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.Key != "" {
		req.Header.Set("Authorization", "Bearer "+e.Key)
	}
	client := e.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embeddings endpoint %s: %w (is it running? the search is lexical meanwhile)", url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("embeddings endpoint %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("embeddings endpoint %s: %s: %.200s (check %s and %s)", url, resp.Status, data, EnvEmbeddingsModel, EnvEmbeddingsKey)
	}
	var r struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("embeddings endpoint %s: the answer is not OpenAI's embeddings JSON: %w", url, err)
	}
	out := make([][]float32, len(texts))
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= len(texts) || len(d.Embedding) == 0 {
			return nil, fmt.Errorf("embeddings endpoint %s: an embedding with index %d for %d texts", url, d.Index, len(texts))
		}
		out[d.Index] = unit(d.Embedding)
	}
	for i, v := range out {
		if v == nil {
			return nil, fmt.Errorf("embeddings endpoint %s: no embedding for text %d of %d", url, i, len(texts))
		}
	}
	return out, nil
}

// unit returns v scaled to length 1.
func unit(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return v
	}
	n := float32(1 / math.Sqrt(s))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * n
	}
	return out
}

// IndexOptions are how an index ranks beyond its words.
type IndexOptions struct {
	// Embedder, if set, is fused with the lexical ranking.
	Embedder Embedder
}

// NewWith indexes docs with options (nil: as New).
func NewWith(docs []Doc, o *IndexOptions) *Index {
	ix := newIndex(docs, defaults)
	if o != nil && o.Embedder != nil {
		ix.emb = &embedded{e: o.Embedder}
	}
	return ix
}

// embedded is an index's vectors from its Embedder, made on the first
// search that needs them.
type embedded struct {
	e Embedder
	// mu guards the fields below; a search waits while another embeds.
	mu     sync.Mutex
	docs   [][]float32
	failed time.Time // the last failure: no new try for retryAfter
	err    error
}

// The embeddings' constants: how long a failed endpoint is left alone,
// how long a search waits for it, how deep each ranking goes into the
// fusion, and reciprocal rank fusion's k (Cormack, Clarke and Büttcher,
// "Reciprocal Rank Fusion outperforms Condorcet and individual Rank
// Learning Methods", SIGIR 2009).
const (
	retryAfter  = time.Minute
	embedWait   = 10 * time.Second
	fusionDepth = 50
	rrfK        = 60
)

// docText is what is embedded of a tool.
func docText(d *Doc) string {
	var s strings.Builder
	s.WriteString(d.Name)
	if d.Tool != nil {
		for _, t := range []string{d.Tool.Title, d.Tool.Description} {
			if t != "" {
				s.WriteString(": ")
				s.WriteString(t)
			}
		}
	}
	return s.String()
}

// vectors returns the docs' vectors, embedding them if need be.
func (m *embedded) vectors(ctx context.Context, docs []Doc) ([][]float32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.docs != nil {
		return m.docs, nil
	}
	if !m.failed.IsZero() && time.Since(m.failed) < retryAfter {
		return nil, m.err
	}
	texts := make([]string, len(docs))
	for i := range docs {
		texts[i] = docText(&docs[i])
	}
	ctx, cancel := context.WithTimeout(ctx, embedWait)
	defer cancel()
	vs, err := m.e.Embed(ctx, texts)
	if err == nil && len(vs) != len(texts) {
		err = fmt.Errorf("the embedder gave %d vectors for %d tools", len(vs), len(texts))
	}
	if err != nil {
		m.failed, m.err = time.Now(), err
		return nil, err
	}
	m.docs = vs
	return vs, nil
}

// fuse returns the reciprocal-rank fusion of the lexical scores and the
// query's cosine similarity to each tool; on an embedder's failure, the
// lexical scores and the error.
func (ix *Index) fuse(ctx context.Context, query string, lexical []float32, allow func(*Doc) bool) ([]float32, error) {
	docs, err := ix.emb.vectors(ctx, ix.docs)
	if err != nil {
		return lexical, err
	}
	qctx, cancel := context.WithTimeout(ctx, embedWait)
	defer cancel()
	qv, err := ix.emb.e.Embed(qctx, []string{query})
	if err == nil && len(qv) != 1 {
		err = errors.New("the embedder gave no vector for the query")
	}
	if err != nil {
		return lexical, err
	}
	q := qv[0]
	cos := make([]float32, len(docs))
	for i, v := range docs {
		if len(v) != len(q) {
			continue
		}
		var c float32
		for k := range v {
			c += v[k] * q[k]
		}
		cos[i] = c
	}
	fused := make([]float32, len(ix.docs))
	for _, ranking := range [][]float32{lexical, cos} {
		var order []int
		for i, s := range ranking {
			if s > 0 && (allow == nil || allow(&ix.docs[i])) {
				order = append(order, i)
			}
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(ranking[b], ranking[a]) })
		for r, i := range order[:min(len(order), fusionDepth)] {
			fused[i] += 1 / float32(rrfK+r+1)
		}
	}
	return fused, nil
}
