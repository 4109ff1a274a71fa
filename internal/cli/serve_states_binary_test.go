//go:build linux

package cli

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
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
				return &mcp.StreamableClientTransport{Endpoint: ep[0], HTTPClient: &http.Client{Transport: bearer{ep[1]}}}, nil
			})
		})
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	t.Logf("%d clients, %d failures", stdioClients+httpClients, len(failures))
}

// TestBinaryServeStoppedAndErrorTools: through `nerve mcp serve`, the
// tools of a node stopped with `nerve node stop` and of a node in ERROR
// stay listed, and a call to one is an isError result that says why and
// what starts it, as `nerve call` does. Before (issue 27 item 1) both were
// JSON-RPC -32602 "unknown tool" to an agent.
func TestBinaryServeStoppedAndErrorTools(t *testing.T) {
	n := newRealNerve(t)
	bad := testutil.BuildBinary(t, "./fixtures/badmcp")
	n.Must("node", "add", "identity", "echo")
	n.Must("node", "add", "mcp", "cr", "--", bad, "--mode", "crash-call")
	n.Must("node", "stop", "echo")
	if _, errs, code := n.Run("call", "@cr", "boom"); code == 0 {
		t.Fatalf("boom did not crash the server: %s", errs)
	}
	testutil.WaitFor(t, 20*time.Second, func() bool {
		return regexp.MustCompile(`(?m)^cr\s+mcp\s+ERROR`).MatchString(n.Must("node", "ls"))
	}, "cr to be in ERROR")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: n.Command("mcp", "serve"), TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ tool, node, cliTool, want string }{
		{"echo.identity", "echo", "identity", "start it with `nerve node start echo`"},
		{"cr.boom", "cr", "boom", "restart it with `nerve node restart cr`"},
	} {
		args := map[string]any{"text": "x"}
		cli := []string{"call", "@" + tc.node, tc.cliTool, "text=x"}
		if tc.node == "cr" {
			args, cli = map[string]any{}, cli[:3]
		}
		if !slices.ContainsFunc(list.Tools, func(tl *mcp.Tool) bool { return tl.Name == tc.tool }) {
			t.Errorf("tools/list lacks %s", tc.tool)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: args})
		if err != nil {
			t.Errorf("calling %s: %v, want an isError result", tc.tool, err)
			continue
		}
		text := resultText(res)
		if !res.IsError || !strings.Contains(text, tc.want) {
			t.Errorf("calling %s: isError %v %q, want %q", tc.tool, res.IsError, text, tc.want)
		}
		// The CLI's words.
		if _, errs, code := n.Run(cli...); code == 0 || !strings.Contains(errs, text) {
			t.Errorf("nerve %s: exit %d %q; want the words the MCP client got, %q", strings.Join(cli, " "), code, errs, text)
		}
	}
}
