package cli

import (
	"context"
	"io"
	"strings"
	"testing"
)

// onFirstRead is a reader that runs before once, at its first Read.
type onFirstRead struct {
	before func()
	r      io.Reader
}

func (o *onFirstRead) Read(p []byte) (int, error) {
	if f := o.before; f != nil {
		o.before = nil
		f()
	}
	return o.r.Read(p)
}

// TestGraphEditKeepsAChangeMadeMeanwhile: `nerve graph edit` replaces the
// graph only if it is still the one it read before reading the file; a
// step someone added meanwhile stays, and the edit fails saying the graph
// changed and how to go on. Without a change meanwhile the edit goes
// through.
func TestGraphEditKeepsAChangeMadeMeanwhile(t *testing.T) {
	env, out, errb := embeddedEnv(t)
	ctx := context.Background()
	runSteps(t, env, out, errb, []step{
		{argv: []string{"node", "add", "identity", "echo"}},
		{argv: []string{"graph", "step", "g", "one", "@echo", "identity", "text=one"}, stderr: "(1 steps)"},
	})
	edited := "steps:\n  one: {call: echo.identity, args: {text: edited}}\n"
	env.Stdin = &onFirstRead{r: strings.NewReader(edited), before: func() {
		// Someone else adds a step while the edit reads its file.
		if err := Exec(ctx, env, []string{"graph", "step", "g", "two", "@echo", "identity", "text=two"}); err != nil {
			t.Errorf("graph step during the edit: %v", err)
		}
	}}
	errb.Reset()
	code := ExitCode(errb, Exec(ctx, env, []string{"graph", "edit", "g", "--from", "-"}))
	if code == ExitOK || !strings.Contains(errb.String(), `node "g" was changed by someone else since it was read`) ||
		!strings.Contains(errb.String(), "compare it with `nerve graph export g` first") {
		t.Errorf("graph edit of a graph changed meanwhile: exit %d, stderr %q; want a failure saying it changed", code, errb)
	}
	runSteps(t, env, out, errb, []step{
		{argv: []string{"graph", "export", "g"}, stdout: "  two: {call: echo.identity, args: {text: two}}"},
	})

	env.Stdin = strings.NewReader(edited)
	runSteps(t, env, out, errb, []step{
		{argv: []string{"graph", "edit", "g", "--from", "-"}, stderr: "graph g changed (1 steps)"},
		{argv: []string{"graph", "export", "g"}, stdout: edited},
	})
}
