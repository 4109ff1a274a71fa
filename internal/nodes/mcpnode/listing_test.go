package mcpnode

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/mcpconf"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

// TestToolListing: what a server's tool listing at start does to its node
// (issue 27): a server that does not declare the tools capability still
// has its tools listed, or none without a failed start; a tools/list that
// fails keeps the node READY with no tools and a warning, unless the node
// requires tools.
func TestToolListing(t *testing.T) {
	tests := []struct {
		name      string
		flags     []string
		opts      string
		tools     int
		startErr  string            // "" : the start succeeds
		details   map[string]string // node info detail → text it holds
		noDetails []string
	}{
		{
			name:    "undeclared, listed",
			flags:   []string{"--no-tools-capability"},
			tools:   1,
			details: map[string]string{"tools_capability": "not declared by the server; listed all the same (tools/list answered 1)"},
		},
		{
			name:    "undeclared, not listed",
			flags:   []string{"--no-tools-capability", "--mode", "list-error"},
			details: map[string]string{"tools_capability": "not declared by the server; it did not list tools either"},
		},
		{
			name:  "tools/list fails",
			flags: []string{"--mode", "list-error"},
			details: map[string]string{"warning": "listing its tools (tools/list) failed at start: tools unavailable: database locked " +
				"(internal error: the server failed while handling it; code -32603); the node runs with no tools"},
		},
		{
			name:     "tools/list fails, tools required",
			flags:    []string{"--mode", "list-error"},
			opts:     `"require_tools":true`,
			startErr: "listing its tools (tools/list) failed during start: tools unavailable: database locked",
		},
		{
			name:      "declared and listed",
			flags:     []string{"--mode", "ok"},
			tools:     1,
			noDetails: []string{"tools_capability", "warning"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := faultSession(t, faultConfig())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			spec := stdioSpec("n", badmcp(t, tt.flags...))
			if tt.opts != "" {
				spec.Options = json.RawMessage(`{"transport":"stdio",` + tt.opts + `}`)
			}
			n, err := s.Add(ctx, spec)
			if tt.startErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.startErr) {
					t.Fatalf("start error %v, want one saying %q", err, tt.startErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			info := n.Info()
			if info.State != node.Ready || info.Tools != tt.tools {
				t.Errorf("node is %s with %d tools, want READY with %d", info.State, info.Tools, tt.tools)
			}
			for k, want := range tt.details {
				if got, _ := info.Details[k].(string); !strings.Contains(got, want) {
					t.Errorf("node info %s = %q, want it to say %q", k, got, want)
				}
			}
			for _, k := range tt.noDetails {
				if v, ok := info.Details[k]; ok {
					t.Errorf("node info has %s = %v, want none", k, v)
				}
			}
			if tt.tools > 0 {
				if got, err := echo(ctx, s, "n", "hi"); err != nil || got != "hi" {
					t.Errorf("echo = %q, %v", got, err)
				}
			}
		})
	}
}

// TestSourceInErrors: a server imported from a config file names the file
// and line in its node's errors and node info (issue 27).
func TestSourceInErrors(t *testing.T) {
	t.Parallel()
	cfg, err := mcpconf.Parse("/work/.mcp.json", []byte("{\"mcpServers\": {\n  \"ok\": {\"command\": \"x\"},\n  \"bad\": {\"command\": \"x\"}\n}}"))
	if err != nil {
		t.Fatal(err)
	}
	srv := cfg.Servers[1]
	srv.Command = badmcp(t, "--mode", "crash-start")
	s := faultSession(t, faultConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const from = `from /work/.mcp.json:3 (server "bad")`
	_, err = s.Add(ctx, srv.Spec("bad"))
	if err == nil || !strings.HasSuffix(err.Error(), from) {
		t.Fatalf("start error %v, want it to end %q", err, from)
	}
	info, _ := s.Info("bad")
	if !strings.HasSuffix(info.Error, from) {
		t.Errorf("ERROR reason %q, want it to end %q", info.Error, from)
	}
	if got := info.Details["from"]; got != strings.TrimPrefix(from, "from ") {
		t.Errorf("node info from = %v, want %q", got, strings.TrimPrefix(from, "from "))
	}

	// A crash after the start says it too.
	srv.Command = badmcp(t, "--mode", "crash-idle", "--idle-ms", "200")
	if _, err := s.Add(ctx, srv.Spec("idle")); err != nil {
		t.Fatal(err)
	}
	idle, _ := s.Node("idle")
	testutil.WaitFor(t, 10*time.Second, func() bool { return idle.State() == node.Error }, "the node to go ERROR")
	info, _ = s.Info("idle")
	if !strings.Contains(info.Error, "exited with code 5") || !strings.HasSuffix(info.Error, from) {
		t.Errorf("ERROR reason %q, want the crash and then %q", info.Error, from)
	}
}
