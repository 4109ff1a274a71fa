//go:build unix

package cli

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestNodeInfoDetails: `nerve node info` prints a node's details in one
// order, by name, every time, and a number as written: a bash node's
// output_cap came out as 1.048576e+06, its fields in a new order each run
// (issue 27 item 6).
func TestNodeInfoDetails(t *testing.T) {
	ctx := context.Background()
	env, out, errb := embeddedEnv(t)
	if err := Exec(ctx, env, []string{"node", "add", "bash", "sh", "--env", "B=2", "--env", "A=1", "--env", "C=3"}); err != nil {
		t.Fatalf("%v: %s", err, errb)
	}
	var first string
	for i := range 5 {
		out.Reset()
		if err := Exec(ctx, env, []string{"node", "info", "sh"}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = out.String()
		} else if out.String() != first {
			t.Fatalf("node info changed between two runs:\n%s\n---\n%s", first, out)
		}
	}
	if n := strings.Count(first, "\ncwd "); n != 1 {
		t.Errorf("cwd said %d times:\n%s", n, first)
	}
	if !regexp.MustCompile(`(?m)^output_cap +1048576$`).MatchString(first) {
		t.Errorf("output_cap is not the number of bytes as written:\n%s", first)
	}
	var keys, env3 []string
	after := false
	for _, l := range strings.Split(strings.TrimSpace(first), "\n") {
		k, v, _ := strings.Cut(l, " ")
		switch {
		case k == "env":
			env3 = append(env3, strings.TrimSpace(v))
		case k == "options":
			after = true // the details follow the spec
		case after || k == "output_cap":
			after = true
			keys = append(keys, k)
		}
	}
	if want := []string{"A=1", "B=2", "C=3"}; !slices.Equal(env3, want) {
		t.Errorf("env lines %q; want %q", env3, want)
	}
	if len(keys) < 3 || !slices.IsSorted(keys) {
		t.Errorf("details %q are not in order of their names:\n%s", keys, first)
	}
}

// TestNodeInterruptSaysWhat: `nerve node interrupt` says whether a call
// was in flight; with none it printed nothing (issue 27 item 6).
func TestNodeInterruptSaysWhat(t *testing.T) {
	ctx := context.Background()
	env, out, errb := embeddedEnv(t)
	if err := Exec(ctx, env, []string{"node", "add", "bash", "sh"}); err != nil {
		t.Fatalf("%v: %s", err, errb)
	}
	out.Reset()
	if err := Exec(ctx, env, []string{"node", "interrupt", "sh"}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "nothing to interrupt: sh has no call in flight (READY)\n" {
		t.Errorf("interrupt with nothing in flight: %q", got)
	}
	c, err := env.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Session(env.SessionName())
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, "sh", "bash", []byte(`{"command": "sleep 30"}`), nil)
		done <- err
	}()
	testutil.WaitFor(t, 20*time.Second, func() bool {
		d, err := s.Node(ctx, "sh")
		return err == nil && d.Info.InFlight == 1
	}, "the call to be in flight")
	out.Reset()
	if err := Exec(ctx, env, []string{"node", "interrupt", "sh"}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "interrupted sh: its call in flight was told to stop\n" {
		t.Errorf("interrupt with a call in flight: %q", got)
	}
	if err := <-done; err != nil {
		t.Errorf("the interrupted call: %v", err)
	}
}
