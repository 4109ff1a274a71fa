package repl

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/commander"
)

// searchLimit is how many tools `@? WORDS` shows.
const searchLimit = 8

// search shows the session's tools that do what words say, ranked by the
// session's one index, as search_tools and `nerve tools --search` rank
// them. The daemon answers at once: no listing waits for a node.
func (r *repl) search(ctx context.Context, words string) {
	res, err := r.catalog.session.SearchTools(ctx, words, searchLimit)
	if err != nil {
		r.printErr(err)
		return
	}
	found := make([]commander.Found, 0, len(res.Tools))
	for _, t := range res.Tools {
		var mt mcp.Tool
		if err := json.Unmarshal(t.Tool.Tool, &mt); err != nil {
			r.printErr(fmt.Errorf("tool %s: %w", t.Qualified, err))
			return
		}
		found = append(found, commander.Found{Node: t.Node, Tool: &mt})
	}
	fmt.Fprint(r.out, commander.RenderSearch(words, found, res.Nearest, res.Of, r.style))
}
