package codemode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/codemode"
	"github.com/nerve-dev/nerve/pkg/node"
)

// modelBytes is what passes through a model's context for one task: the
// tool definitions it is given, what it writes (calls) and reads
// (results), turn by turn.
type modelBytes struct {
	defs  int
	turns []int // bytes each round trip adds: a call and its result
}

// context is the bytes added to the model's context in all.
func (m modelBytes) context() int {
	n := m.defs
	for _, t := range m.turns {
		n += t
	}
	return n
}

// processed is the bytes the model reads over the task: at each turn,
// the whole context so far (each round trip sends it again), and once
// more for the final answer.
func (m modelBytes) processed() int {
	n, ctx := 0, m.defs
	for _, t := range m.turns {
		n += ctx
		ctx += t
	}
	return n + ctx
}

// notesFolder is a folder of 30 files: three notes of about 6 KB, which
// the task reads, and 27 small logs.
func notesFolder() map[string]string {
	files := map[string]string{}
	for i, topic := range []string{"design", "plan", "review"} {
		var b strings.Builder
		for l := range 100 {
			fmt.Fprintf(&b, "%s note, line %d: the daemon keeps each node alive and answers calls in order.\n", topic, l+1)
		}
		files[fmt.Sprintf("%c-%s.md", 'a'+i, topic)] = b.String()
	}
	for i := range 27 {
		files[fmt.Sprintf("z-log-%02d.txt", i)] = fmt.Sprintf("log %d\n", i)
	}
	return files
}

// TestBytesThroughModel measures issue 30's item 5: the ten dependent
// calls of tenCalls against the real filesystem and memory servers, made
// by a model one tool call at a time, or as one run_script. The plain
// calls are the very calls the script made (the session's call log), so
// both ways see the same arguments and results; a result counts as the
// text a model reads (node.ResultText), a definition as its JSON. Goal:
// at least 5× fewer bytes through the model with run_script.
func TestBytesThroughModel(t *testing.T) {
	rs := newRealSessionWith(t, notesFolder())
	ctx := context.Background()
	res, err := codemode.Run(ctx, tenCalls, &codemode.Options{Tools: rs})
	if err != nil || res.Calls != 10 {
		t.Fatalf("%v (%d calls)", err, res.Calls)
	}
	ts := rs.Toolset(ctx)
	var plain modelBytes
	for _, te := range ts.Tools() {
		def := *te.Tool
		def.Name = te.Qualified // as nerve's MCP endpoint names it
		b, _ := json.Marshal(&def)
		plain.defs += len(b)
	}
	for _, c := range rs.calls() {
		plain.turns = append(plain.turns, len(c.Node)+1+len(c.Tool)+len(c.Arguments)+len(node.ResultText(c.Result, 0)))
	}
	var script modelBytes
	def, _ := json.Marshal(codemode.Tool(ts, nil))
	script.defs = len(def)
	call, _ := json.Marshal(map[string]string{"script": tenCalls})
	script.turns = []int{len(codemode.ToolName) + len(call) + len(node.ResultText(codemode.ToolResult(res, err), 0))}

	callsOnly := float64(plain.context()-plain.defs) / float64(script.context()-script.defs)
	withDefs := float64(plain.context()) / float64(script.context())
	overTurns := float64(plain.processed()) / float64(script.processed())
	t.Logf("definitions: plain %d B (%d tools), run_script %d B", plain.defs, ts.Len(), script.defs)
	t.Logf("calls and results: plain %d B, script %d B: %.1f×", plain.context()-plain.defs, script.context()-script.defs, callsOnly)
	t.Logf("context with definitions: plain %d B, script %d B: %.1f×", plain.context(), script.context(), withDefs)
	t.Logf("read over the turns: plain %d B (%d turns), script %d B (2 turns): %.1f×", plain.processed(), len(plain.turns)+1, script.processed(), overTurns)
	if callsOnly < 5 || overTurns < 5 {
		t.Errorf("run_script passes %.1f× fewer bytes of calls and results and %.1f× fewer over the turns; the goal is 5×", callsOnly, overTurns)
	}
}
