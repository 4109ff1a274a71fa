//go:build linux

package cli

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
)

// TestBinaryServeFirstCallsAfterRestart: after a daemon restart with ten
// catalogued server-memory nodes, twenty MCP clients of `nerve mcp serve`
// and ten of the HTTP endpoint at once — initialize, tools/list, then a
// first tools/call of mK.read_graph, several clients per node — all get
// the node's answer. Before (issue 27 item 1), some got JSON-RPC -32602
// "unknown tool" and a tools/list without the nodes that were starting:
// when one node came up, the server withdrew the tools of every node still
// starting, whose first call another client had just made.
func TestBinaryServeFirstCallsAfterRestart(t *testing.T) {
	n := newRealNerve(t)
	const nodes, stdioClients, httpClients = 10, 20, 10
	for k := 1; k <= nodes; k++ {
		n.Must(append([]string{"node", "add", "mcp", fmt.Sprintf("m%d", k), "--"}, npmfix.ServerMemory(t)...)...)
	}
	// Each node comes back lazy, with its catalogue; the first client
	// starts the daemon.
	n.Must("daemon", "stop")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	client := func(i int, how string, transport func() (mcp.Transport, error)) {
		tool := fmt.Sprintf("m%d.read_graph", i%nodes+1)
		fail := func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			failures = append(failures, fmt.Sprintf("%s client %d (%s): ", how, i, tool)+fmt.Sprintf(format, args...))
		}
		tr, err := transport()
		if err != nil {
			fail("%v", err)
			return
		}
		c := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("client%d", i)}, nil)
		cs, err := c.Connect(ctx, tr, nil)
		if err != nil {
			fail("initialize: %v", err)
			return
		}
		defer cs.Close()
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			fail("tools/list: %v", err)
			return
		}
		if !slices.ContainsFunc(list.Tools, func(tl *mcp.Tool) bool { return tl.Name == tool }) {
			fail("tools/list lacks it (%d tools)", len(list.Tools))
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		switch {
		case err != nil:
			fail("tools/call: %v", err)
		case res.IsError:
			fail("tools/call: isError %s", resultText(res))
		}
	}
	for i := range stdioClients {
		wg.Go(func() {
			client(i, "stdio", func() (mcp.Transport, error) {
				return &mcp.CommandTransport{Command: n.Command("mcp", "serve"), TerminateDuration: time.Second}, nil
			})
		})
	}
	// The endpoint's URL and token (this too may start the daemon).
	endpoint := sync.OnceValues(func() ([]string, error) {
		out, errs, code := n.Run("mcp", "url")
		if f := strings.Fields(out); code == 0 && len(f) == 2 {
			return f, nil
		}
		return nil, fmt.Errorf("nerve mcp url: exit %d %q %q", code, out, errs)
	})
	for i := range httpClients {
		wg.Go(func() {
			client(i, "http", func() (mcp.Transport, error) {
				ep, err := endpoint()
				if err != nil {
					return nil, err
				}
				return &mcp.StreamableClientTransport{Endpoint: ep[0], HTTPClient: &http.Client{Transport: bearer(ep[1])}}, nil
			})
		})
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	t.Logf("%d clients, %d failures", stdioClients+httpClients, len(failures))
}

// bearer sends the endpoint's token with every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// resultText is the text of a tool result's content.
func resultText(res *mcp.CallToolResult) string {
	var s string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s += tc.Text
		}
	}
	return s
}
