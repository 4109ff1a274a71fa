//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBinaryGraphInputNeverRunsAsShell calls docs/graphs.md's example step
// (`wc -l ${inputs.file}` on a bash node) through `nerve mcp serve` with
// a real MCP client, as a model that read hostile text would: the value
// reaches the command as one literal word and nothing it holds runs
// (issue 17, item 1).
func TestBinaryGraphInputNeverRunsAsShell(t *testing.T) {
	n := newRealNerve(t)
	dir := t.TempDir()
	def := filepath.Join(n.home, "stats.yaml")
	os.WriteFile(def, []byte(`
inputs:
  file: {type: string, description: file to count}
steps:
  stats: {call: bash.bash, args: {command: "wc -l ${inputs.file}"}, on_error: continue}
  echo:  {call: bash.bash, args: {command: "printf '<%s>' ${inputs.file}; printf '[%s]' \"${inputs.file}\""}}
output: "${steps.echo.text}"
`), 0o600)
	// A new session has a bash node named bash.
	n.Must("graph", "add", "stats", "--from", def)

	c := mcp.NewClient(&mcp.Implementation{Name: "attacker"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: n.Command("mcp", "serve"), TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	pwned := filepath.Join(dir, "pwned-XYZ")
	for _, v := range []string{
		"/etc/hostname; touch " + pwned,
		"$(touch " + pwned + ")",
		"`touch " + pwned + "`",
		"/etc/hostname\ntouch " + pwned,
		"'; touch " + pwned + "; echo '",
		"\"; touch " + pwned + "; echo \"",
		"x\x00; touch " + pwned,
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "stats.run", Arguments: map[string]any{"file": v}})
		if err != nil {
			t.Fatalf("calling stats.run with %q: %v", v, err)
		}
		if _, err := os.Stat(pwned); err == nil {
			t.Fatalf("the input %q ran as shell code: %s exists", v, pwned)
		}
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if strings.Contains(v, "\x00") {
			// No shell command can carry a NUL: the step fails, saying so.
			if !res.IsError || !strings.Contains(text, "NUL") {
				t.Errorf("with a NUL byte: %q (isError %v); want a failed step naming the NUL", text, res.IsError)
			}
			continue
		}
		if want := "<" + v + ">[" + v + "]"; res.IsError || text != want {
			t.Errorf("the command saw %q (isError %v), want %q", text, res.IsError, want)
		}
	}
}

// TestBinaryGraphArguments: a mistyped input is refused with did-you-mean,
// never taken as the value of the one string input; `@g run` runs a graph
// with its defaults, and with a required input reads stdin (issue 17,
// items 2 and 3).
func TestBinaryGraphArguments(t *testing.T) {
	n := newRealNerve(t)
	opt := filepath.Join(n.home, "opt.yaml")
	os.WriteFile(opt, []byte(`
inputs: {mode: {type: string, default: safe}}
steps:
  say: {call: echo.identity, args: {text: "mode=${inputs.mode}"}}
`), 0o600)
	req := filepath.Join(n.home, "req.yaml")
	os.WriteFile(req, []byte(`
inputs: {file: string}
steps:
  say: {call: echo.identity, args: {text: "file=${inputs.file}"}}
`), 0o600)
	n.Must("node", "add", "identity", "echo")
	n.Must("graph", "add", "opt", "--from", opt)
	n.Must("graph", "add", "fan", "--from", req)

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"call", "@opt", "mdoe=fast"}, `unknown argument "mdoe" for @opt run — did you mean mode?`},
		{[]string{"call", "@fan", "fiel=x"}, `unknown argument "fiel" for @fan run — did you mean file?`},
		{[]string{"call", "@fan", "a=3"}, `unknown argument "a" for @fan run`},
		{[]string{"call", "@fan", `{"fiel": "x"}`}, `unknown argument "fiel" for @fan run — did you mean file?`},
	} {
		out, errs, code := n.Run(tt.args...)
		if code != ExitUsage || !strings.Contains(errs, tt.want) || out != "" {
			t.Errorf("nerve %s: exit %d, stdout %q, stderr %q; want exit %d saying %q", strings.Join(tt.args, " "), code, out, errs, ExitUsage, tt.want)
		}
	}
	if out := n.Must("call", "@opt", "run"); out != "mode=safe\n" {
		t.Errorf("nerve call @opt run printed %q, want the default: mode=safe", out)
	}
	if out := n.Must("call", "@fan", "file=fiel=x"); out != "file=fiel=x\n" {
		t.Errorf("nerve call @fan file=fiel=x printed %q", out)
	}
	n.Stdin = `{"file": "from-stdin"}`
	if out := n.Must("call", "@fan", "run"); out != "file=from-stdin\n" {
		t.Errorf("echo '{\"file\": …}' | nerve call @fan run printed %q, want the input read from stdin", out)
	}
}

// TestBinaryGraphServedToMCP: through `nerve mcp serve`, a graph's tool
// schema holds its inputs only (no _resume a model could fill in), and a
// caller that gave a progress token gets a progress notification for each
// step event, so a long graph keeps it waiting (issue 17, items 3 and 5).
func TestBinaryGraphServedToMCP(t *testing.T) {
	n := newRealNerve(t)
	def := filepath.Join(n.home, "two.yaml")
	os.WriteFile(def, []byte(`
inputs: {word: {type: string, default: hi}}
steps:
  a: {call: echo.identity, args: {text: "${inputs.word}"}}
  b: {call: echo.identity, args: {text: "${steps.a.text}!"}}
`), 0o600)
	n.Must("node", "add", "identity", "echo")
	n.Must("graph", "add", "two", "--from", def)

	progress := make(chan string, 100)
	c := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params.Message
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: n.Command("mcp", "serve"), TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range tools.Tools {
		if tl.Name != "two.run" {
			continue
		}
		found = true
		b, _ := json.Marshal(tl.InputSchema)
		if strings.Contains(string(b), "_resume") || !strings.Contains(string(b), `"word"`) {
			t.Errorf("two.run's input schema: %s; want its inputs and nothing else", b)
		}
	}
	if !found {
		t.Fatalf("two.run is not served: %v", tools.Tools)
	}
	params := &mcp.CallToolParams{Name: "two.run", Arguments: map[string]any{}}
	params.SetProgressToken("t1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("two.run: %v %v", err, res)
	}
	var got []string
	for len(got) < 4 {
		select {
		case m := <-progress:
			got = append(got, m)
		case <-time.After(10 * time.Second):
			t.Fatalf("progress notifications: %q; want one per step event (a, b started and finished)", got)
		}
	}
	for _, want := range []string{"step a started", "step a finished", "step b started", "step b finished"} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("progress notifications %q lack %q", got, want)
		}
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "two.run", Arguments: map[string]any{"_resume": "two.x"}})
	if err != nil || !res.IsError {
		t.Errorf("two.run with _resume: %v %v; want it refused as an unknown argument", err, res)
	}
}

// TestBinaryGraphAskReachesMCPClient: an ask step of a graph called
// through session-wide `nerve mcp serve` is put to the calling client as
// an elicitation, and its answer goes on into the graph; a client without
// elicitation is told that no one is attached, not that a person declined
// (issue 17, item 4).
func TestBinaryGraphAskReachesMCPClient(t *testing.T) {
	n := newRealNerve(t)
	def := filepath.Join(n.home, "gate.yaml")
	os.WriteFile(def, []byte(`
inputs: {file: string}
steps:
  approve: {ask: "Publish ${inputs.file}?"}
  say: {call: echo.identity, args: {text: "answer: ${steps.approve.text}"}}
`), 0o600)
	n.Must("node", "add", "identity", "echo")
	n.Must("graph", "add", "gate", "--from", def)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var asked string
	c := mcp.NewClient(&mcp.Implementation{Name: "person"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "ship it"}}, nil
		},
	})
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: n.Command("mcp", "serve"), TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gate.run", Arguments: map[string]any{"file": "a.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; res.IsError || got != "answer: ship it" || asked != "Publish a.txt?" {
		t.Errorf("gate.run: %q (isError %v), the client was asked %q; want the answer to go on", got, res.IsError, asked)
	}

	mute := mcp.NewClient(&mcp.Implementation{Name: "script"}, nil)
	ms, err := mute.Connect(ctx, &mcp.CommandTransport{Command: n.Command("mcp", "serve"), TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	res, err = ms.CallTool(ctx, &mcp.CallToolParams{Name: "gate.run", Arguments: map[string]any{"file": "a.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(got, "no one is attached to answer: run it from the Commander or a client that supports elicitation") {
		t.Errorf("gate.run without elicitation: %q (isError %v)", got, res.IsError)
	}
}
