//go:build unix

package cli

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
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
