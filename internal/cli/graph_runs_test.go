package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGraphRunsCountsEveryStep: `nerve graph runs` counts all of a run's
// steps; a 250-step run showed "200 finished", the steps the summary
// lists, without saying they were not all (issue 27 item 6).
func TestGraphRunsCountsEveryStep(t *testing.T) {
	ctx := context.Background()
	env, out, errb := embeddedEnv(t)
	if err := Exec(ctx, env, []string{"node", "add", "identity", "id"}); err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	src.WriteString("steps:\n")
	for i := range 250 {
		fmt.Fprintf(&src, "  s%d: {call: id.identity, args: {text: x}}\n", i)
	}
	file := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(file, []byte(src.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{"graph", "add", "big", "--from", file}, {"call", "@big", "run"}} {
		if err := Exec(ctx, env, argv); err != nil {
			t.Fatalf("%v: %v %s", argv, err, errb)
		}
	}
	out.Reset()
	if err := Exec(ctx, env, []string{"graph", "runs", "big"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "  250 finished\n") {
		t.Errorf("graph runs of a 250-step run:\n%s", out)
	}
	out.Reset()
	env.JSON = true
	if err := Exec(ctx, env, []string{"graph", "runs", "big"}); err != nil {
		t.Fatal(err)
	}
	var runs []runSummary
	if err := json.Unmarshal(out.Bytes(), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("--json graph runs: %v %s", err, out)
	}
	if r := runs[0]; r.StepCount != 250 || len(r.Steps) != 200 || r.StepStates["finished"] != 250 {
		t.Errorf("--json: step_count %d, %d steps listed, states %v; want 250, 200 and 250 finished", r.StepCount, len(r.Steps), r.StepStates)
	}
}
