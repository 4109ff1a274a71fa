package mcpnode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/atomicfile"
	"github.com/nerve-dev/nerve/internal/syncs"
	"github.com/nerve-dev/nerve/pkg/node"
)

// catalogFile is the node's catalogue in its private folder: what its
// server offered the last time it ran.
const catalogFile = "catalog.json"

// catalog is what a server offers, saved so a node that is not running
// can still answer listings, help and completion.
type catalog struct {
	Saved     time.Time               `json:"saved"`
	Init      *mcp.InitializeResult   `json:"initialize,omitempty"`
	Tools     []*mcp.Tool             `json:"tools"`
	Resources []*mcp.Resource         `json:"resources,omitempty"`
	Templates []*mcp.ResourceTemplate `json:"resource_templates,omitempty"`
	Prompts   []*mcp.Prompt           `json:"prompts,omitempty"`
	// Cache is what a server of 2026-07-28 said of each list's lifetime
	// (ttlMs, cacheScope: listCache); a list past it is stale, read again
	// at the next use while the server runs, and when it next starts.
	Cache map[string]listCache `json:"cache,omitempty"`
}

func (n *Node) catalogPath() string {
	if n.env.Dir == "" {
		return ""
	}
	return filepath.Join(n.env.Dir, catalogFile)
}

// loadCatalog fills the node's lists from its catalogue, if it has one.
func (n *Node) loadCatalog() {
	p := n.catalogPath()
	if p == "" {
		return
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return
	}
	var c catalog
	if err := json.Unmarshal(data, &c); err != nil {
		n.log.Warn("the tool catalogue cannot be read; the server's lists come when it starts", zap.String("file", p), zap.Error(err))
		return
	}
	index := make(map[string]*mcp.Tool, len(c.Tools))
	for _, t := range c.Tools {
		index[t.Name] = t
	}
	n.mu.Lock()
	n.tools, n.toolIndex = c.Tools, index
	n.resources, n.templates, n.prompts = c.Resources, c.Templates, c.Prompts
	n.initResult = c.Init
	n.caches = c.Cache
	n.catalogued, n.catalogSaved = true, c.Saved
	n.mu.Unlock()
}

// saveCatalog writes what the server offers now, atomically; it is called
// after every listing, and writes only when something changed.
func (n *Node) saveCatalog() {
	p := n.catalogPath()
	if p == "" {
		return
	}
	n.mu.RLock()
	c := catalog{Saved: time.Now().UTC(), Init: n.initResult, Tools: n.tools, Resources: n.resources, Templates: n.templates, Prompts: n.prompts}
	for k, lc := range n.caches {
		if lc.TTLMs > 0 || lc.Scope == "private" {
			if c.Cache == nil {
				c.Cache = map[string]listCache{}
			}
			c.Cache[k] = lc
		}
	}
	n.mu.RUnlock()
	if c.Tools == nil {
		c.Tools = []*mcp.Tool{}
	}
	data, err := json.Marshal(c)
	if err != nil {
		n.log.Warn("encoding the tool catalogue", zap.Error(err))
		return
	}
	n.catalogMu.Lock()
	defer n.catalogMu.Unlock()
	if old, err := os.ReadFile(p); err == nil && sameCatalog(old, data) {
		return
	}
	if err := os.MkdirAll(n.env.Dir, 0o700); err != nil {
		n.log.Warn("saving the tool catalogue", zap.Error(err))
		return
	}
	if err := atomicfile.Write(p, data, 0o600); err != nil {
		n.log.Warn("saving the tool catalogue", zap.Error(err))
		return
	}
	n.mu.Lock()
	n.catalogued, n.catalogSaved = true, c.Saved
	n.mu.Unlock()
}

// sameCatalog compares two catalogues but for the times they were saved
// and their lists fetched.
func sameCatalog(a, b []byte) bool {
	var x, y map[string]json.RawMessage
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	for _, m := range []map[string]json.RawMessage{x, y} {
		delete(m, "saved")
		var cache map[string]listCache
		if json.Unmarshal(m["cache"], &cache) == nil && cache != nil {
			for k, lc := range cache {
				lc.Fetched = time.Time{}
				cache[k] = lc
			}
			m["cache"], _ = json.Marshal(cache)
		}
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// Catalogued reports whether the node knows its server's lists without
// running (node.Lazy).
func (n *Node) Catalogued() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.catalogued
}

// StartsLazily reports whether the node waits for its first call to start
// its server (node.Lazy): option start=lazy, or by default a stdio server
// with a catalogue.
func (n *Node) StartsLazily() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.startsLazilyLocked()
}

func (n *Node) startsLazilyLocked() bool {
	syncs.AssertRLocked(&n.mu)
	switch n.opts.Start {
	case "eager":
		return false
	case "lazy":
		return n.catalogued
	}
	return n.server.Transport == "stdio" && n.catalogued
}

var _ node.Lazy = (*Node)(nil)
