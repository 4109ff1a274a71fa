//go:build unix

package cli

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"testing"
)

// TestBinaryGraphStepsAtOnce: `nerve graph step` commands run at once on
// one graph, each adding its own step, all succeed and every step is in
// the graph afterwards — first on a graph none of them finds (one makes
// it, the others add to it), then on one that exists. Each command reads
// the graph, adds its step and replaces it only if nobody changed it
// since (If-Match); one that lost reads it again. Each lost try is
// another command's won one, so up to graphStepRetries+1 commands at
// once always all succeed, however they interleave; 8 do here.
func TestBinaryGraphStepsAtOnce(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "echo")
	const racers = 8 // ≤ graphStepRetries+1
	var want []string
	for round, name := range []string{"new", "existing"} {
		cmds := make([]*exec.Cmd, racers)
		outs := make([]*bytes.Buffer, racers)
		for i := range cmds {
			step := fmt.Sprintf("%s%d", name, i)
			want = append(want, step)
			cmds[i] = n.Command("graph", "step", "g", step, "@echo", "identity", "text="+step)
			outs[i] = &bytes.Buffer{}
			cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
			if err := cmds[i].Start(); err != nil {
				t.Fatal(err)
			}
		}
		for i, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				t.Errorf("round %d (%s graph): `nerve graph step g %s%d`: %v\n%s", round, name, name, i, err, outs[i])
			}
		}
		src := n.Must("graph", "export", "g")
		var got []string
		for _, m := range regexp.MustCompile(`(?m)^  ([a-z]+[0-9]+):`).FindAllStringSubmatch(src, -1) {
			got = append(got, m[1])
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("after %d `nerve graph step` at once on the %s graph it has steps %q, want %q (a step was lost)\n%s", racers, name, got, want, src)
		}
	}
}
