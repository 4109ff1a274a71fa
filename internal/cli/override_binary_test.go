//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestBinaryToolOverride: `nerve tool override` renames a tool, replaces
// its description, sets a hint and fixes an argument; an MCP client of
// `nerve mcp serve` (the Go SDK's, over the real binary's stdio) sees the
// tool so and calls it by its new name with the fixed value; the
// Commander's listing and discovery see it too; an override that does not
// fit is refused at once; and the override outlives the daemon.
func TestBinaryToolOverride(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	n.Must("node", "add", "mcp", "ev", "--", server)

	out := n.Must("tool", "override", "ev.echo", "--name", "say", "--description", "Says the fixed words.", "--fix", "text=fixed words", "--read-only")
	if !strings.Contains(out, "ev.echo now listed as ev.say") {
		t.Errorf("override printed %q", out)
	}
	// Refused when it does not fit the tool's schema, with why (exit 2).
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ev.slow", "--hide", "ms"}, "cannot hide ms: slow requires it"},
		{[]string{"ev.slow", "--fix", `steps="many"`}, "cannot fix steps"},
		{[]string{"ev.slow", "--hide", "step"}, `did you mean "steps"?`},
		{[]string{"ev.fail", "--name", "say"}, `name "say" is taken`},
	} {
		_, errOut, code := n.Run(append([]string{"tool", "override"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("tool override %v: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}

	check := func(when string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx,
			&mcp.CommandTransport{Command: n.Command("mcp", "serve"), TerminateDuration: time.Second}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var say *mcp.Tool
		for _, tl := range res.Tools {
			switch tl.Name {
			case "ev.say":
				say = tl
			case "ev.echo":
				t.Errorf("%s: tools/list still has ev.echo", when)
			}
		}
		if say == nil {
			t.Fatalf("%s: tools/list has no ev.say", when)
		}
		schema, _ := json.Marshal(say.InputSchema)
		if say.Description != "Says the fixed words." || say.Annotations == nil || !say.Annotations.ReadOnlyHint || strings.Contains(string(schema), "text") {
			t.Errorf("%s: ev.say = %q, %+v, schema %s", when, say.Description, say.Annotations, schema)
		}
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ev.say", Arguments: map[string]any{}})
		if err != nil || r.IsError || resultText(r) != "fixed words" {
			t.Errorf("%s: call ev.say = %q (isError %v), %v; want the fixed words", when, resultText(r), r != nil && r.IsError, err)
		}
		r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ev.say", Arguments: map[string]any{"text": "mine"}})
		if err != nil || !r.IsError || !strings.Contains(resultText(r), `argument "text" is fixed`) {
			t.Errorf("%s: call ev.say with text = %q, %v; want an isError result saying text is fixed", when, resultText(r), err)
		}
	}
	check("before the daemon restarts")

	// The HTTP endpoint lists it so too.
	var ep struct{ URL, Token string }
	if err := json.Unmarshal([]byte(n.Must("--json", "mcp", "url")), &ep); err != nil {
		t.Fatal(err)
	}
	hctx, hcancel := context.WithTimeout(context.Background(), time.Minute)
	defer hcancel()
	hs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(hctx, &mcp.StreamableClientTransport{Endpoint: ep.URL,
		HTTPClient: &http.Client{Transport: bearer{ep.Token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hr, err := hs.CallTool(hctx, &mcp.CallToolParams{Name: "ev.say", Arguments: map[string]any{}})
	if err != nil || resultText(hr) != "fixed words" {
		t.Errorf("ev.say over the HTTP endpoint = %q, %v", resultText(hr), err)
	}
	hs.Close()

	// Discovery finds and describes it by its new name.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: n.Command("mcp", "serve", "--discover"), TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "describe_tool", Arguments: map[string]any{"name": "ev.say"}})
	if err != nil || r.IsError || !strings.Contains(resultText(r), "Says the fixed words.") {
		t.Errorf("describe_tool ev.say = %q, %v", resultText(r), err)
	}
	cs.Close()

	// The Commander's listing and a call by the new name.
	if out := n.Must("call", "@ev", "?"); !strings.Contains(out, "say") || strings.Contains(out, "echo ") {
		t.Errorf("@ev ? = %q; want say, not echo", out)
	}
	if out := n.Must("call", "@ev", "say"); strings.TrimSpace(out) != "fixed words" {
		t.Errorf("nerve call @ev say = %q", out)
	}
	if out := n.Must("tools", "ev"); !strings.Contains(out, "ev.say") {
		t.Errorf("nerve tools ev = %q", out)
	}
	// Code mode: the script's function is the new name, with the fixed value.
	n.Stdin = "result = ev.say()\n"
	if out := n.Must("script", "-"); strings.TrimSpace(out) != "fixed words" {
		t.Errorf("nerve script ev.say() = %q", out)
	}
	n.Stdin = ""
	if out := n.Must("node", "info", "ev"); !strings.Contains(out, "echo → say (description, read-only=true, fixed text)") {
		t.Errorf("node info ev = %q", out)
	}
	if out := n.Must("tool", "override", "ev.say"); !strings.Contains(out, `fixed        text="fixed words"`) {
		t.Errorf("tool override ev.say (show) = %q", out)
	}

	// Saved with the node: the daemon comes back with it.
	state, err := os.ReadFile(filepath.Join(n.home, "sessions", "default.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(state), `"overrides"`) {
		t.Errorf("the state file has no overrides: %s", state)
	}
	n.Must("daemon", "stop")
	check("after the daemon restarted")

	n.Must("tool", "override", "ev.say", "--clear")
	if out := n.Must("call", "@ev", "echo", "text=back"); strings.TrimSpace(out) != "back" {
		t.Errorf("after --clear, @ev echo = %q", out)
	}
}

// bearer adds the endpoint's token to each request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// resultText is the text of a result's text blocks.
func resultText(r *mcp.CallToolResult) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
