package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestNodeLsColour colours states and keeps the table aligned.
func TestNodeLsColour(t *testing.T) {
	ctx := context.Background()
	env, out, _ := embeddedEnv(t)
	if err := Exec(ctx, env, []string{"node", "add", "identity", "a-long-node-name"}); err != nil {
		t.Fatal(err)
	}
	on := true
	env.Color = &on
	out.Reset()
	if err := Exec(ctx, env, []string{"node", "ls"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\x1b[32mREADY\x1b[0m") {
		t.Errorf("READY is not green:\n%q", out)
	}
	lines := strings.Split(strings.TrimSpace(ansi.ReplaceAllString(out.String(), "")), "\n")
	col := strings.Index(lines[0], "STATE")
	for _, l := range lines[1:] {
		if i := regexp.MustCompile(`CREATED|STARTING|READY|BUSY|STOPPING|STOPPED|ERROR`).FindStringIndex(l); i == nil || i[0] != col {
			t.Errorf("state at column %d, header at %d:\n%s", i, col, strings.Join(lines, "\n"))
		}
	}
	for _, h := range []string{"TOOLS", "CALLS", "RUNNING"} {
		if !strings.Contains(lines[0], h) {
			t.Errorf("header %q lacks %s", lines[0], h)
		}
	}
	off := false
	env.Color = &off
	out.Reset()
	if err := Exec(ctx, env, []string{"node", "ls"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "\x1b[") {
		t.Errorf("colour with colour off:\n%q", out)
	}
}
