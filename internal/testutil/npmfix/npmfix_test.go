package npmfix

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nerve-dev/nerve/internal/testutil"
)

func TestEnsureSkipsInstallWhenLockHashMatches(t *testing.T) {
	lock := []byte(`{"lockfileVersion": 3}`)
	sum := sha256.Sum256(lock)
	tests := []struct {
		name    string
		marker  string // "" means no marker file
		wantErr string // "" means ensure must succeed without npm
	}{
		{"matching hash", hex.EncodeToString(sum[:]) + "\n", ""},
		{"stale hash", "0123\n", "npm is not on PATH"},
		{"never installed", "", "npm is not on PATH"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "package-lock.json"), lock, 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.marker != "" {
				os.Mkdir(filepath.Join(dir, "node_modules"), 0o755)
				if err := os.WriteFile(filepath.Join(dir, "node_modules", hashFile), []byte(tc.marker), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// An empty PATH proves that an up-to-date install never runs npm.
			t.Setenv("PATH", "")
			_, err := ensure(t, dir)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ensure: %v, want no install", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("ensure: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestServerEverythingToolsList proves the installer and the argv helper by
// listing the everything server's tools through the Go SDK, as nerve will.
func TestServerEverythingToolsList(t *testing.T) {
	argv := ServerEverything(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// The server registers its sampling and elicitation tools only for
	// clients that advertise those capabilities.
	client := mcp.NewClient(&mcp.Implementation{Name: "npmfix-test", Version: "v0"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "none", Content: &mcp.TextContent{Text: "no"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	// The server does not exit when its stdin closes; a short
	// TerminateDuration has Close send SIGTERM after 100ms instead of 5s.
	transport := &mcp.CommandTransport{Command: exec.Command(argv[0], argv[1:]...), TerminateDuration: 100 * time.Millisecond}
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connecting to %v: %v", argv, err)
	}
	defer cs.Close()

	var names []string
	pages := 0
	var cursor string
	for {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		pages++
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	t.Logf("server-everything: %d tools in %d page(s): %s", len(names), pages, strings.Join(names, ", "))
	for _, want := range []string{"echo", "get-tiny-image", "get-structured-content", "trigger-long-running-operation",
		"trigger-sampling-request", "trigger-elicitation-request"} {
		if !slices.Contains(names, want) {
			t.Errorf("tool %q missing from %v", want, names)
		}
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi nerve"}})
	if err != nil {
		t.Fatalf("calling echo: %v", err)
	}
	if len(res.Content) != 1 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "hi nerve") {
		t.Errorf("echo returned %#v, want text containing %q", res.Content, "hi nerve")
	}
}

// TestInspectorListsTools runs the MCP Inspector CLI against the everything
// server over stdio, proving the Inspector argv works.
func TestInspectorListsTools(t *testing.T) {
	argv := append(Inspector(t), ServerEverything(t)...)
	argv = append(argv, "--method", "tools/list")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
	if !strings.Contains(string(out), `"name": "get-tiny-image"`) {
		t.Errorf("inspector output lacks get-tiny-image:\n%s", out)
	}
}

// TestConformanceRuns runs two conformance scenarios with Node 22 against
// the Go fixture server, proving the Node22 and Conformance helpers.
func TestConformanceRuns(t *testing.T) {
	argv := Conformance(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	server := exec.CommandContext(ctx, testutil.BuildBinary(t, "./fixtures/mcpserver"), "--http", "127.0.0.1:0")
	stderr, err := server.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); server.Wait() }()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("mcpserver said %q, %v; want listening on URL", line, err)
	}

	for _, scenario := range []string{"server-initialize", "tools-list"} {
		cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], "server", "--url", url, "--scenario", scenario)...)
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "0 failed") {
			t.Errorf("conformance %s: %v\n%s", scenario, err, out)
		}
	}
}
