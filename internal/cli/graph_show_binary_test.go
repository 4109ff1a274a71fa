//go:build unix

package cli

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestBinaryGraphShowJSONIsLossless: `nerve --json graph show RUN` gives
// the run's whole record — a step's 10 KB text as the tool answered it,
// arguments as the JSON objects they were, nested — before and after a
// daemon restart (issue 17, item 9).
func TestBinaryGraphShowJSONIsLossless(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "identity", "echo")
	n.Must("graph", "add", "inner", "--from", writeFile(t, filepath.Join(n.home, "inner.yaml"), `
inputs: {cfg: object, deep: object}
steps:
  x: {call: echo.identity, args: {text: ok}}
`))
	n.Must("graph", "add", "g", "--from", writeFile(t, filepath.Join(n.home, "g.yaml"), `
inputs: {big: string, cfg: object}
steps:
  a: {call: echo.identity, args: {text: "${inputs.big}"}}
  b: {call: inner.run, args: {cfg: "${inputs.cfg}", deep: {list: [1, {k: "v<>&"}], none: null, s: "a\"b"}}}
`))
	var big strings.Builder
	for i := 0; big.Len() < 10<<10; i++ {
		big.WriteString("line " + strings.Repeat("é<>&\"'\t", i%5) + "\\ end\n")
	}
	text := big.String() + "last"
	cfg := map[string]any{"a": map[string]any{"b": []any{1.0, "two", map[string]any{"c": true}}}, "empty": map[string]any{}}
	inputs, _ := json.Marshal(map[string]any{"big": text, "cfg": cfg})
	n.Must("call", "@g", string(inputs))

	var runs []runSummary
	if err := json.Unmarshal([]byte(n.Must("--json", "graph", "runs", "g")), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("graph runs: %v %v", err, runs)
	}
	type record struct {
		ID     string         `json:"id"`
		State  string         `json:"state"`
		Inputs map[string]any `json:"inputs"`
		Steps  []struct {
			ID     string         `json:"id"`
			Args   map[string]any `json:"args"`
			Cut    bool           `json:"cut"`
			Result struct {
				Text string `json:"text"`
			} `json:"result"`
		} `json:"steps"`
	}
	wantB := map[string]any{"cfg": cfg, "deep": map[string]any{"list": []any{1.0, map[string]any{"k": "v<>&"}}, "none": nil, "s": `a"b`}}
	for _, when := range []string{"after the run", "after a daemon restart"} {
		out := n.Must("--json", "graph", "show", runs[0].ID)
		var rec record
		if err := json.Unmarshal([]byte(out), &rec); err != nil {
			t.Fatalf("%s: graph show --json printed what is not JSON: %v\n%.300s", when, err, out)
		}
		if rec.ID != runs[0].ID || rec.State != "finished" || len(rec.Steps) != 2 {
			t.Fatalf("%s: the record is of run %s, %s, with %d steps", when, rec.ID, rec.State, len(rec.Steps))
		}
		a, b := rec.Steps[0], rec.Steps[1]
		if a.Result.Text != text || a.Cut {
			t.Errorf("%s: step a's text is %d bytes (cut %v), want the %d bytes the tool answered, exactly", when, len(a.Result.Text), a.Cut, len(text))
		}
		if !reflect.DeepEqual(a.Args, map[string]any{"text": text}) {
			t.Errorf("%s: step a's args are not the object it was called with", when)
		}
		if !reflect.DeepEqual(b.Args, wantB) {
			t.Errorf("%s: step b's args are\n%v\nwant\n%v", when, b.Args, wantB)
		}
		if !reflect.DeepEqual(rec.Inputs["cfg"], cfg) || rec.Inputs["big"] != text {
			t.Errorf("%s: the inputs did not round-trip: %v", when, rec.Inputs["cfg"])
		}
		n.Must("daemon", "stop")
	}
	if _, errs, code := n.Run("--json", "graph", "show", "g.20200101-000000.000-abcdef"); code != ExitUsage || !strings.Contains(errs, `no run "g.20200101-000000.000-abcdef" of graph g`) {
		t.Errorf("graph show of a run that is not there: exit %d, %s", code, errs)
	}
}
