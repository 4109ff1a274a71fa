package cli

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// TestMCPServeRefuses: a session or node that does not exist is told on
// stderr before any MCP is spoken.
func TestMCPServeRefuses(t *testing.T) {
	env, out, errb := embeddedEnv(t)
	ctx := context.Background()
	for _, tt := range []struct {
		argv   []string
		stderr string
	}{
		{[]string{"mcp", "serve", "--node", "nope"}, `no node "nope"`},
		{[]string{"-s", "nosuch", "mcp", "serve"}, `no session "nosuch"`},
		{[]string{"mcp", "serve", "--names", "dots"}, "unknown tool naming"},
	} {
		out.Reset()
		errb.Reset()
		env.Stdin = strings.NewReader("")
		code := ExitCode(errb, Exec(ctx, env, tt.argv))
		name := strings.Join(tt.argv, " ")
		if code != ExitUsage || !strings.Contains(errb.String(), tt.stderr) || out.Len() != 0 {
			t.Errorf("nerve %s: exit %d, stderr %q, stdout %q; want exit %d saying %q", name, code, errb, out, ExitUsage, tt.stderr)
		}
	}
}

// TestMCPServeRelays: `nerve mcp serve` answers MCP on stdio and returns
// (exit 0) when stdin ends.
func TestMCPServeRelays(t *testing.T) {
	env, _, errb := embeddedEnv(t)
	ctx := context.Background()
	if code := ExitCode(errb, Exec(ctx, env, []string{"node", "add", "identity", "echo"})); code != 0 {
		t.Fatalf("node add: %s", errb)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	env.Stdin, env.Stdout = inR, outW
	done := make(chan int, 1)
	go func() { done <- ExitCode(errb, Exec(ctx, env, []string{"mcp", "serve"})) }()
	lines := bufio.NewReader(outR)
	go io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	line, err := lines.ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":1`) || !strings.Contains(line, `"serverInfo"`) {
		t.Fatalf("answer to initialize: %q %v", line, err)
	}
	go io.Copy(io.Discard, lines) // whatever else the server says
	inW.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after stdin ended (stderr %q); want 0", code, errb)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("nerve mcp serve did not return when stdin ended")
	}
	outW.Close()
}
