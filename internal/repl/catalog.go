package repl

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/commander"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/client/mcpclient"
)

// catalog is the REPL's cached view of the session's nodes and tools, for
// parsing and completion without a round trip per key. Events mark it stale;
// the next use after that refreshes it.
type catalog struct {
	session *client.Session
	ix      atomic.Pointer[commander.Index]
	// notes holds commander.NodeNote of each node that is not running.
	notes atomic.Pointer[map[string]string]
	stale atomic.Bool
	// mu serialises refreshes.
	mu sync.Mutex
}

func newCatalog(s *client.Session) *catalog {
	c := &catalog{session: s}
	c.ix.Store(commander.NewIndex(nil))
	return c
}

// index returns the current Index, refreshing it first when it is stale.
func (c *catalog) index() *commander.Index {
	if c.stale.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c.refresh(ctx)
		cancel()
	}
	return c.ix.Load()
}

func (c *catalog) invalidate() { c.stale.Store(true) }

// note is what node id's tools are worth when it is not running
// (commander.NodeNote), as of the last refresh.
func (c *catalog) note(id string) string {
	if m := c.notes.Load(); m != nil {
		return (*m)[id]
	}
	return ""
}

// refresh asks the daemon for every node and the tools of the ready ones:
// two round trips whatever the number of nodes.
func (c *catalog) refresh(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stale.Store(false)
	infos, err := c.session.Nodes(ctx)
	if err != nil {
		c.stale.Store(true)
		return
	}
	// The daemon answers at once, nodes that are starting included.
	tools, err := mcpclient.Toolset(ctx, c.session)
	if err != nil {
		c.stale.Store(true)
		return
	}
	m := make(map[string][]*mcp.Tool, len(infos))
	notes := map[string]string{}
	for _, info := range infos {
		m[info.ID] = nil
		if n := commander.NodeNote(info); n != "" {
			notes[info.ID] = n
		}
	}
	c.notes.Store(&notes)
	for _, t := range tools {
		m[t.Node] = append(m[t.Node], t.MCPTool)
	}
	c.ix.Store(commander.NewIndex(m))
}

// completer adapts commander.Complete to readline.
type completer struct{ r *repl }

func (c *completer) Do(line []rune, pos int) ([][]rune, int) {
	cands, n := commander.Complete(string(line), pos, c.r.catalog.index(), c.r.cmds)
	out := make([][]rune, 0, len(cands))
	for _, cand := range cands {
		rs := []rune(cand)
		if n <= len(rs) {
			out = append(out, rs[n:])
		}
	}
	return out, n
}
