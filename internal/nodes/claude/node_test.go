package claude

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/pkg/node"
)

func TestAskStreamsTheWholeTurn(t *testing.T) {
	r := newRig(t, withEnv("FAKECLAUDE_MCP_TOOLS", "read_file"),
		withOptions(Options{MCPConfig: `{"mcpServers": {"fs": {"command": "fs-server"}}}`}))
	r.start()
	answer, evs := r.ask("tool")
	if answer != "The file says hi" {
		t.Errorf("answer = %q, want %q", answer, "The file says hi")
	}
	var texts, steps []string
	data := map[string]string{}
	for _, ev := range evs {
		switch ev.Kind {
		case node.EventText:
			texts = append(texts, ev.Text)
		case node.EventStep:
			steps = append(steps, ev.Step)
			data[ev.Step] = string(ev.Data)
		}
	}
	if want := []string{"The file says ", "hi"}; !slices.Equal(texts, want) {
		t.Errorf("streamed text = %q, want %q (each delta once, not repeated by the complete message)", texts, want)
	}
	if want := []string{"init", "thinking", "tool_use", "tool_result", "usage", "cost"}; !slices.Equal(steps, want) {
		t.Errorf("steps = %q, want %q", steps, want)
	}
	for step, want := range map[string]string{
		"thinking":    `"text":"I should read the file."`,
		"tool_use":    `"name":"mcp__fs__read_file"`,
		"tool_result": `"content":"hi"`,
		"usage":       `"output_tokens":5`,
		"cost":        `"total_cost_usd":0.002`,
		"init":        `"mcp_servers":[{"name":"fs","status":"connected","tools":["read_file"]}]`,
	} {
		if !strings.Contains(data[step], want) {
			t.Errorf("step %s data = %s, want it to contain %s", step, data[step], want)
		}
	}
	r.ask("hello")
	d := r.n.Info().Details
	if d["session_id"] != r.state().SessionID || d["session_id"] == "" {
		t.Errorf("Info session_id = %v, saved state %+v", d["session_id"], r.state())
	}
	if d["model"] != "claude-fake-1" || d["turns"] != int64(2) || d["cost_usd"] != 0.003 {
		t.Errorf("Info details = %v, want model claude-fake-1, 2 turns, cost 0.003", d)
	}
	if got := r.n.State(); got != node.Ready {
		t.Errorf("state after calls = %v, want READY", got)
	}
}

func TestArgvAddsFlagsOnce(t *testing.T) {
	id := "11111111-2222-4333-8444-555555555555"
	other := "99999999-2222-4333-8444-555555555555"
	tests := []struct {
		name    string
		command []string
		l       launch
		want    string
		wantErr string
	}{
		{"default", nil, launch{sessionID: id},
			"claude --print --input-format stream-json --output-format stream-json --verbose --include-partial-messages --session-id " + id, ""},
		{"user flags kept, not repeated", []string{"claude", "-p", "--verbose", "--model", "opus", "--output-format=stream-json"}, launch{sessionID: id},
			"claude -p --verbose --model opus --output-format=stream-json --input-format stream-json --include-partial-messages --session-id " + id, ""},
		{"resume", []string{"claude"}, launch{sessionID: id, resume: true},
			"claude --print --input-format stream-json --output-format stream-json --verbose --include-partial-messages --resume " + id, ""},
		{"fork", []string{"claude"}, launch{sessionID: id, forkFrom: other, mcpConfig: "/p/c.json", strictMCP: true, permission: "plan"},
			"claude --print --input-format stream-json --output-format stream-json --verbose --include-partial-messages --resume " + other +
				" --fork-session --session-id " + id + " --permission-mode plan --strict-mcp-config --mcp-config /p/c.json", ""},
		{"wrapper command", []string{"env", "X=1", "claude", "--strict-mcp-config"}, launch{sessionID: id, strictMCP: true},
			"env X=1 claude --strict-mcp-config --print --input-format stream-json --output-format stream-json --verbose --include-partial-messages --session-id " + id, ""},
		{"wrong output format", []string{"claude", "--output-format", "text"}, launch{sessionID: id}, "", "--output-format text"},
		{"resume in command", []string{"claude", "-r", id}, launch{sessionID: id}, "", "manages"},
		{"two permission modes", []string{"claude", "--permission-mode", "auto"}, launch{sessionID: id, permission: "plan"}, "", "keep one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv, err := buildArgv(tt.command, tt.l)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(argv, " "); got != tt.want {
				t.Errorf("argv =\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}
}

func TestOptionsRejectMistakes(t *testing.T) {
	for _, tt := range []struct{ options, want string }{
		{`{"permission_mode": "yolo"}`, "acceptEdits"},
		{`{"session_id": "abc"}`, "not a UUID"},
		{`{"timeout": "-1s"}`, "negative"},
		{`{"mcp_confg": "x"}`, "unknown field"},
	} {
		_, err := New(node.Spec{ID: "cc", Kind: Kind, Options: json.RawMessage(tt.options)}, node.Env{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("options %s: err = %v, want one mentioning %q", tt.options, err, tt.want)
		}
	}
}

func TestMCPConfigFilePrivateExpandedAndRemoved(t *testing.T) {
	t.Setenv("NERVE_TEST_TOKEN", "s3cret")
	cfgFile := filepath.Join(t.TempDir(), "mcp.json")
	// VS Code's format, with a variable: nerve rewrites it in Claude's.
	os.WriteFile(cfgFile, []byte(`{"servers": {
		"fs": {"type": "stdio", "command": "fs-server", "args": ["/tmp"], "env": {"TOKEN": "${NERVE_TEST_TOKEN}"}},
		"web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${NERVE_TEST_TOKEN}"}}
	}}`), 0o600)
	r := newRig(t, withOptions(Options{MCPConfig: cfgFile, StrictMCPConfig: true, PermissionMode: "plan"}))
	r.start()
	path, _ := r.n.Info().Details["mcp_config_file"].(string)
	if path == "" || filepath.Dir(path) != r.dir {
		t.Fatalf("mcp_config_file = %q, want a file in the node's folder %s", path, r.dir)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, r.dir: 0o700} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("mode of %s = %v, want %v", p, st.Mode().Perm(), want)
		}
	}
	run := r.lastRun()
	if got, _ := run.flag("--mcp-config"); got != path {
		t.Errorf("--mcp-config %q, want %q", got, path)
	}
	for _, f := range []string{"--strict-mcp-config", "--permission-mode"} {
		if _, ok := run.flag(f); !ok {
			t.Errorf("argv %q lacks %s", run.Argv, f)
		}
	}
	want := map[string]any{"mcpServers": map[string]any{
		"fs":  map[string]any{"command": "fs-server", "args": []any{"/tmp"}, "env": map[string]any{"TOKEN": "s3cret"}},
		"web": map[string]any{"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": map[string]any{"Authorization": "Bearer s3cret"}},
	}}
	if len(run.MCPConfigs) != 1 || !reflect.DeepEqual(run.MCPConfigs[0], want) {
		t.Errorf("claude got MCP config %v\nwant %v", run.MCPConfigs, want)
	}
	if got := r.n.Info().Details["mcp_servers"]; !reflect.DeepEqual(got, []string{"fs", "web"}) {
		t.Errorf("Info mcp_servers = %v, want [fs web]", got)
	}
	r.ask("hello")
	if got, _ := r.n.Info().Details["mcp_status"].([]MCPServer); len(got) != 2 || got[0].Status != "connected" {
		t.Errorf("Info mcp_status = %v, want both servers connected", got)
	}
	if err := r.n.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("config %s still there after Stop (err %v)", path, err)
	}
}

func TestUnsetVariableInConfigFailsStart(t *testing.T) {
	r := newRig(t, withOptions(Options{MCPConfig: `{"mcpServers": {"x": {"command": "${NERVE_SURELY_UNSET_VAR}"}}}`}))
	err := r.n.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "NERVE_SURELY_UNSET_VAR") {
		t.Fatalf("Start err = %v, want one naming the unset variable", err)
	}
	if st := r.n.State(); st != node.Error {
		t.Errorf("state = %v, want ERROR", st)
	}
}

func TestConversationSurvivesRestarts(t *testing.T) {
	r := newRig(t)
	r.start()
	r.ask("first")
	id := r.state().SessionID
	if got, _ := r.lastRun().flag("--session-id"); got != id {
		t.Fatalf("first start: --session-id %q, want the saved id %q", got, id)
	}
	// Restart of the node.
	if err := r.n.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.ask("second")
	// A daemon restart: a new node from the saved spec and state.
	r.n.Stop(context.Background())
	r.build(node.Env{})
	r.start()
	if got, _ := r.lastRun().flag("--resume"); got != id {
		t.Errorf("after a daemon restart: --resume %q, want %q (argv %q)", got, id, r.lastRun().Argv)
	}
	if got, _ := r.ask("history"); got != "first | second" {
		t.Errorf("history after restarts = %q, want %q", got, "first | second")
	}
	if d := r.n.Info().Details; d["turns"] != int64(3) || d["cost_usd"] != 0.003 {
		t.Errorf("turns and cost over restarts = %v, %v; want 3, 0.003", d["turns"], d["cost_usd"])
	}
}

func TestStartedButNeverAskedStartsFresh(t *testing.T) {
	r := newRig(t)
	r.start()
	r.n.Stop(context.Background())
	r.start()
	if _, ok := r.lastRun().flag("--resume"); ok {
		t.Errorf("a node never asked resumed a conversation Claude does not have: %q", r.lastRun().Argv)
	}
	r.ask("hello")
}

func TestForkFromAnotherConversation(t *testing.T) {
	a := newRig(t)
	a.start()
	a.ask("alpha")
	aID := a.state().SessionID

	b := newRig(t, withEnv("FAKECLAUDE_HOME", a.home), withOptions(Options{ForkFromSession: aID}))
	b.start()
	bID := b.state().SessionID
	if bID == "" || bID == aID {
		t.Fatalf("forked node's session id = %q, want a new one (not %q)", bID, aID)
	}
	run := b.lastRun()
	if r, _ := run.flag("--resume"); r != aID {
		t.Errorf("--resume %q, want %q", r, aID)
	}
	if s, _ := run.flag("--session-id"); s != bID {
		t.Errorf("--session-id %q, want %q", s, bID)
	}
	if _, ok := run.flag("--fork-session"); !ok {
		t.Errorf("no --fork-session in %q", run.Argv)
	}
	if got, _ := b.ask("history"); got != "alpha" {
		t.Errorf("forked history = %q, want %q", got, "alpha")
	}
	// The fork is its own conversation now: a restart resumes it, not A.
	b.n.Stop(context.Background())
	b.start()
	if r, _ := b.lastRun().flag("--resume"); r != bID {
		t.Errorf("restarted fork: --resume %q, want its own %q", r, bID)
	}
	if got, _ := a.ask("history"); got != "alpha" {
		t.Errorf("the original's history = %q, want it untouched (%q)", got, "alpha")
	}
}

func TestInterruptEndsTheTurnAndKeepsTheNode(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		trigger func(r *rig, cancel context.CancelFunc)
		want    string
	}{
		{"Interrupt", Options{}, func(r *rig, _ context.CancelFunc) { r.n.Interrupt(context.Background()) }, "interrupted"},
		{"cancelled context", Options{}, func(_ *rig, cancel context.CancelFunc) { cancel() }, "cancelled"},
		{"timeout", Options{Timeout: node.Duration(300 * time.Millisecond)}, func(*rig, context.CancelFunc) {}, "timed out after 300ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, withOptions(tt.opts))
			r.start()
			pid := r.n.Info().Details["pid"]
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := r.callUntil(ctx, "slow", isText("working"))
			tt.trigger(r, cancel)
			o := wait(t, done)
			if o.err != nil {
				t.Fatalf("interrupted call: %v", o.err)
			}
			if txt := resultText(o.res); !o.res.IsError || !strings.Contains(txt, tt.want) || !strings.Contains(txt, "working") {
				t.Errorf("result = %v %q, want an error result saying %q with the partial answer", o.res.IsError, txt, tt.want)
			}
			if got, _ := r.ask("history"); got != "slow" {
				t.Errorf("next call: history = %q, want %q", got, "slow")
			}
			if r.n.Info().Details["pid"] != pid {
				t.Error("the interrupt restarted Claude; the interrupt message should have ended the turn")
			}
		})
	}
}

func TestInterruptIgnoredRestartsClaude(t *testing.T) {
	r := newRig(t)
	r.n.interruptGrace = 300 * time.Millisecond
	r.start()
	pid := r.n.Info().Details["pid"]
	done := r.callUntil(context.Background(), "stuck", isText("working"))
	r.n.Interrupt(context.Background())
	o := wait(t, done)
	if o.err != nil || !o.res.IsError || !strings.Contains(resultText(o.res), "restarted") {
		t.Fatalf("result = %v, %v; want an error result saying Claude was restarted", o.res, o.err)
	}
	if r.n.Info().Details["pid"] == pid {
		t.Error("Claude was not replaced")
	}
	if got, _ := r.ask("history"); got != "stuck" {
		t.Errorf("after the restart: history = %q, want %q", got, "stuck")
	}
	if got, _ := r.lastRun().flag("--resume"); got != r.state().SessionID {
		t.Errorf("replacement argv %q does not resume the conversation", r.lastRun().Argv)
	}
}

func TestPermissionPromptIsDenied(t *testing.T) {
	r := newRig(t)
	r.start()
	if got, _ := r.ask("permission"); got != "permission: deny" {
		t.Errorf("answer = %q, want %q", got, "permission: deny")
	}
}

func TestFailures(t *testing.T) {
	t.Run("not installed", func(t *testing.T) {
		for _, cmd := range []string{"/nonexistent/claude", "nerve-no-such-claude"} {
			r := newRig(t)
			r.spec.Command = []string{cmd}
			r.build(node.Env{})
			err := r.n.Start(context.Background())
			if err == nil || !strings.Contains(err.Error(), "not installed") || !strings.Contains(err.Error(), "npm install -g @anthropic-ai/claude-code") {
				t.Errorf("%s: Start err = %v, want 'not installed' and how to install", cmd, err)
			}
			if info := r.n.Info(); info.State != node.Error || !strings.Contains(info.Error, "not installed") {
				t.Errorf("%s: info = %v %q, want ERROR saying not installed", cmd, info.State, info.Error)
			}
		}
	})
	t.Run("exits at start", func(t *testing.T) {
		r := newRig(t, withEnv("FAKECLAUDE_START", "exit"), withOptions(Options{MCPConfig: `{"mcpServers": {"a": {"command": "a"}}}`}))
		err := r.n.Start(context.Background())
		if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "failing at start as asked") {
			t.Fatalf("Start err = %v, want the exit status and the stderr tail", err)
		}
		if files, _ := filepath.Glob(filepath.Join(r.dir, configPrefix+"*")); len(files) != 0 {
			t.Errorf("a failed start left %v", files)
		}
	})
	t.Run("not logged in", func(t *testing.T) {
		r := newRig(t, withEnv("FAKECLAUDE_LOGGED_OUT", "1"))
		r.start()
		res, _, err := r.call(context.Background(), "hello")
		if err != nil || !res.IsError || !strings.Contains(resultText(res), "not logged in") {
			t.Fatalf("call = %v, %v; want an error result saying not logged in", res, err)
		}
		if info := r.n.Info(); info.State != node.Error || !strings.Contains(info.Error, "not logged in") {
			t.Errorf("info = %v %q, want ERROR: not logged in", info.State, info.Error)
		}
	})
	t.Run("crash mid-call", func(t *testing.T) {
		r := newRig(t)
		r.start()
		_, _, err := r.call(context.Background(), "crash")
		if err == nil || !strings.Contains(err.Error(), "exit status 2") {
			t.Fatalf("call err = %v, want exit status 2", err)
		}
		info := r.n.Info()
		if info.State != node.Error || !strings.Contains(info.Error, "crashing as asked") {
			t.Errorf("info = %v %q, want ERROR with the stderr tail", info.State, info.Error)
		}
		if err := r.n.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		r.start()
		if got, _ := r.ask("history"); got != "crash" {
			t.Errorf("after restart: history = %q, want %q", got, "crash")
		}
	})
	t.Run("resume of a lost conversation", func(t *testing.T) {
		r := newRig(t)
		r.saved = json.RawMessage(`{"session_id": "11111111-2222-4333-8444-555555555555", "started": true}`)
		r.build(node.Env{})
		err := r.n.Start(context.Background())
		if err == nil || !strings.Contains(err.Error(), "no conversation 11111111-2222-4333-8444-555555555555") {
			t.Fatalf("Start err = %v, want it to say the conversation is gone", err)
		}
	})
	t.Run("session id already in use", func(t *testing.T) {
		r := newRig(t)
		r.start()
		r.ask("one")
		// State saved before the message reached Claude's transcript.
		r.n.Stop(context.Background())
		r.saved = json.RawMessage(`{"session_id": "` + r.state().SessionID + `"}`)
		r.build(node.Env{})
		r.start()
		if got, _ := r.ask("history"); got != "one" {
			t.Errorf("history = %q, want %q (resumed after 'already in use')", got, "one")
		}
	})
	t.Run("bad arguments", func(t *testing.T) {
		r := newRig(t)
		r.start()
		for _, args := range []string{`{}`, `{"message": ""}`, `{"msg": "x"}`} {
			_, err := r.n.CallTool(context.Background(), &node.CallRequest{Tool: ToolName, Arguments: json.RawMessage(args)})
			if !errors.Is(err, node.ErrBadArgs) {
				t.Errorf("args %s: err = %v, want ErrBadArgs", args, err)
			}
		}
		if _, err := r.n.CallTool(context.Background(), &node.CallRequest{Tool: "other"}); !errors.Is(err, node.ErrUnknownTool) {
			t.Errorf("tool other: err = %v, want ErrUnknownTool", err)
		}
	})
}

func TestSessionTools(t *testing.T) {
	t.Run("no endpoint", func(t *testing.T) {
		r := newRig(t, withOptions(Options{SessionTools: true}))
		err := r.n.Start(context.Background())
		if err == nil || !strings.Contains(err.Error(), "session tools need the MCP endpoint") {
			t.Fatalf("Start err = %v", err)
		}
	})
	t.Run("endpoint not served", func(t *testing.T) {
		r := newRig(t, withOptions(Options{SessionTools: true}), func(_ *node.Spec, env *node.Env) {
			env.MCPEndpoint = func() (string, string, bool) { return "", "", false }
		})
		err := r.n.Start(context.Background())
		if err == nil || !strings.Contains(err.Error(), "session tools need the MCP endpoint") {
			t.Fatalf("Start err = %v", err)
		}
	})
	t.Run("endpoint", func(t *testing.T) {
		r := newRig(t, withOptions(Options{SessionTools: true}), func(_ *node.Spec, env *node.Env) {
			env.MCPEndpoint = func() (string, string, bool) { return "http://127.0.0.1:7/mcp", "tok", true }
		})
		r.start()
		want := map[string]any{"mcpServers": map[string]any{"nerve": map[string]any{
			"type": "http", "url": "http://127.0.0.1:7/mcp", "headers": map[string]any{"Authorization": "Bearer tok"}}}}
		if got := r.lastRun().MCPConfigs; len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Errorf("MCP config = %v, want %v", got, want)
		}
	})
}

func TestCleanupStale(t *testing.T) {
	root := t.TempDir()
	stale := filepath.Join(root, "default", "nodes", "cc", configPrefix+"123.json")
	keep := []string{
		filepath.Join(root, "default.json"),
		filepath.Join(root, "default", "nodes", "cc", "notes.json"),
		filepath.Join(root, "default", "nodes", "cc", configPrefix+"x.txt"),
	}
	for _, p := range append(keep, stale) {
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte("{}"), 0o600)
	}
	if err := CleanupStale(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s survived CleanupStale", stale)
	}
	for _, p := range keep {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("CleanupStale removed %s", p)
		}
	}
	if err := CleanupStale(filepath.Join(root, "missing")); err != nil {
		t.Errorf("missing folder: %v", err)
	}
}
