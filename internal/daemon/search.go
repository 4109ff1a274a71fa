package daemon

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/toolsearch"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/session"
)

// foundEntry is api.FoundTool with the tool as the node's *mcp.Tool (as
// toolsetEntry).
type foundEntry struct {
	api.FoundTool
	MCPTool *mcp.Tool `json:"tool"`
}

type toolSearchBody struct {
	Tools   []foundEntry `json:"tools"`
	Of      int          `json:"of"`
	Nearest bool         `json:"nearest,omitempty"`
}

// handleToolSearch ranks the session's tools for ?q= with the session's
// one index: what `nerve tools --search` and the Commander's @? show.
func (d *Daemon) handleToolSearch(w http.ResponseWriter, r *http.Request, s *session.Session) error {
	q := r.URL.Query()
	words := q.Get("q")
	if strings.TrimSpace(words) == "" {
		return badRequest(fmt.Errorf("a tool search needs words: ?q=WORDS, e.g. ?q=read+a+file"))
	}
	limit := toolsearch.DefaultLimit
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			return badRequest(fmt.Errorf("limit %q: give a whole number of 1 or more", l))
		}
		limit = min(n, 100)
	}
	// ?now=1 (older clients) asked not to wait for nodes that are
	// starting; no listing waits now.
	res := s.SearchTools(r.Context(), words, &toolsearch.Options{Limit: limit})
	ts := s.Toolset(r.Context())
	out := toolSearchBody{Tools: []foundEntry{}, Of: res.Of, Nearest: res.Nearest}
	for _, h := range res.Hits {
		e, ok := ts.Lookup(h.Name)
		if !ok {
			continue // gone since the search
		}
		out.Tools = append(out.Tools, foundEntry{
			FoundTool: api.FoundTool{Tool: api.Tool{Node: e.Node, Qualified: e.Qualified, LLMName: e.LLMName}, Score: h.Score},
			MCPTool:   e.Tool,
		})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
