//go:build linux

package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/fixtures/llmserver"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
)

// TestREPLAnswersServerRequests: server-everything asks the person at the
// Commander during their calls; they type a sampling answer, decline
// another, and fill an elicitation form (an enum, defaults kept).
func TestREPLAnswersServerRequests(t *testing.T) {
	everything := npmfix.ServerEverything(t)
	term := repl(t, t.TempDir(), "--embedded")
	term.Line(":node add mcp ev -- " + strings.Join(everything, " "))
	term.WaitFor("mcp ev is READY", 30*time.Second)

	term.Line("@ev trigger-sampling-request prompt=hello")
	s := term.WaitFor("sampling>", 10*time.Second)
	for _, want := range []string{
		"? @ev asks for a model's answer (sampling)",
		"system: You are a helpful test server.",
		"user: Resource trigger-sampling-request context: hello",
		"max tokens 100 · temperature 0.7",
		"[t] type the answer  [d] decline",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the sampling request is shown without %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "[a] answer with") {
		t.Errorf("[a] is offered without --sampling-node:\n%s", s)
	}
	term.Line("t")
	term.WaitFor("answer>", 20*time.Second)
	term.Line("Forty-two.")
	term.WaitFor("answer> Forty-two.\n", 20*time.Second)
	term.Keys("Enter") // an empty line ends the answer
	s = term.WaitFor("[1] @ev trigger-sampling-request", 10*time.Second)
	if !strings.Contains(s, `"text": "Forty-two."`) || !strings.Contains(s, "human (typed in nerve's Commander)") {
		t.Errorf("the server did not receive the typed answer:\n%s", s)
	}

	term.Line("@ev trigger-sampling-request prompt=second")
	term.WaitFor("context: second", 10*time.Second)
	term.Line("d")
	s = term.WaitFor("[2] @ev trigger-sampling-request", 10*time.Second)
	if !strings.Contains(s, "the user declined the sampling request") {
		t.Errorf("the server was not told the request was declined:\n%s", s)
	}

	term.Line("@ev trigger-elicitation-request")
	term.WaitFor("? @ev asks you:", 10*time.Second)
	term.WaitFor("Please provide inputs for the following fields:", time.Second)
	// name is required: asked first; an empty answer is refused.
	term.WaitFor("(1/13) name — String · required · text", 20*time.Second)
	term.Keys("Enter")
	term.WaitFor("this field is required", 20*time.Second)
	term.Line("Ada Lovelace")
	for _, f := range []struct{ name, answer string }{
		{"birthdate", ""},
		{"check", ""},
		{"email", "not-an-address"},
		{"email", ""},
		{"firstLine", ""},
		{"homepage", ""},
		{"integer", ""},
		{"legacyTitledEnum", ""},
		{"number", ""},
		{"titledMultipleSelectEnum", "1,3"},
		{"titledSingleSelectEnum", ""},
		{"untitledMultipleSelectEnum", ""},
		{"untitledSingleSelectEnum", "3"},
	} {
		term.WaitFor("\n"+f.name+">", 20*time.Second)
		if f.answer == "not-an-address" {
			term.Line(f.answer)
			term.WaitFor(`"not-an-address" is not an email address`, 20*time.Second)
			continue
		}
		term.Line(f.answer)
	}
	s = term.WaitFor("[s]ubmit  [e]dit a field  [d]ecline  [c]ancel", 20*time.Second)
	for _, want := range []string{"1) Monica  2) Rachel  3) Joey", "1) Superman (hero-1)", "Enter keeps the default: It was a dark and stormy night."} {
		if !strings.Contains(s, want) {
			t.Errorf("the form does not show %q:\n%s", want, s)
		}
	}
	term.Line("s")
	s = term.WaitFor("[3] @ev trigger-elicitation-request", 10*time.Second)
	for _, want := range []string{
		"User provided the requested information",
		"- Name: Ada Lovelace",
		`"untitledSingleSelectEnum": "Joey"`,
		`"firstLine": "It was a dark and stormy night."`,
		`"integer": 42`,
		"\"fish-1\",\n      \"fish-3\"",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the server's result lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, `"check"`) {
		t.Errorf("a field left out was sent:\n%s", s)
	}
}

// TestREPLSamplingNode: with --sampling-node, an llm node (on the scripted
// OpenAI server) answers a sampling request after the person consents,
// and the person sends its answer on — from a server of MCP 2026-07-28
// (input_required) and of 2025-11-25 (a request in the middle of the
// call) alike.
func TestREPLSamplingNode(t *testing.T) {
	for _, protocol := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(protocol, func(t *testing.T) { replSamplingNode(t, protocol) })
	}
}

func replSamplingNode(t *testing.T, protocol string) {
	model := llmserver.Turn{Text: "Paris.", Check: func(r *llmserver.Request) error {
		if got := r.Last().Text(); got != "What is the capital of France?" {
			return fmt.Errorf("the model was sent %q; want the server's question", got)
		}
		if len(r.Tools) > 0 {
			return fmt.Errorf("a sampling request offered the model tools %v", r.ToolNames())
		}
		return nil
	}}
	srv, err := llmserver.Listen("127.0.0.1:0", model)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	mcpserver := testutil.BuildBinary(t, "./fixtures/mcpserver")
	term := repl(t, t.TempDir(), "--embedded", "--sampling-node", "gpt")
	term.Line(":node add llm gpt --base-url " + srv.URL + " --model scripted-model")
	term.WaitFor("llm gpt is READY", 10*time.Second)
	term.Line(":node add mcp fx --protocol " + protocol + " -- " + mcpserver)
	term.WaitFor("mcp fx is READY", 20*time.Second)

	term.Line(`@fx sample {"prompt": "What is the capital of France?"}`)
	s := term.WaitFor("[a] answer with @gpt  [t] type the answer  [d] decline", 10*time.Second)
	if !strings.Contains(s, "user: What is the capital of France?") {
		t.Errorf("the request is not shown:\n%s", s)
	}
	if srv.Remaining() != 1 {
		t.Fatal("the model was asked before the person consented")
	}
	term.Line("a")
	s = term.WaitFor("[s]end  [e]dit  [d]ecline", 10*time.Second)
	if !strings.Contains(s, "@gpt (scripted-model) answers:\n  Paris.") {
		t.Errorf("the model's answer is not shown:\n%s", s)
	}
	term.Line("s")
	s = term.WaitFor("[1] @fx sample", 10*time.Second)
	if !strings.Contains(s, "scripted-model said: Paris.") {
		t.Errorf("the server did not receive the model's answer:\n%s", s)
	}
	if err := srv.Err(); err != nil {
		t.Error(err)
	}
}

// TestREPLAsksAtIdlePrompt: a request that arises from another client's
// call (`nerve call` in another terminal) while the Commander waits at its
// prompt is asked there at once, and what the person was typing comes back.
func TestREPLAsksAtIdlePrompt(t *testing.T) {
	home := t.TempDir()
	mcpserver := testutil.BuildBinary(t, "./fixtures/mcpserver")
	term := repl(t, home)
	t.Cleanup(func() { stopDaemon(t, home) })
	term.Line(":node add mcp fx -- " + mcpserver)
	term.WaitFor("mcp fx is READY", 20*time.Second)
	term.Type("@fx ec")
	waitLastLine(t, term, "default> @fx ec")

	bin := testutil.BuildBinary(t, "./cmd/nerve")
	call := exec.Command(bin, "call", "@fx", "elicit", "message=Which colour?")
	call.Env = append(os.Environ(), "NERVE_HOME="+home)
	var out bytes.Buffer
	call.Stdout, call.Stderr = &out, &out
	if err := call.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- call.Wait() }()

	term.WaitFor("? @fx asks you:\n  Which colour?", 10*time.Second)
	term.WaitFor("\nanswer>", 20*time.Second)
	term.Line("teal")
	term.WaitFor("[s]ubmit", 20*time.Second)
	term.Line("s")
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "user answered: teal") {
			t.Errorf("nerve call did not receive the answer (%v):\n%s", err, out.String())
		}
	case <-time.After(20 * time.Second):
		_ = call.Process.Kill()
		t.Fatalf("nerve call is still waiting after the answer was sent:\n%s", out.String())
	}
	waitLastLine(t, term, "default> @fx ec")
	term.Type("ho hi")
	term.Keys("Enter")
	term.WaitFor("[1] @fx echo", 20*time.Second)
}
