package planner

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/graphlang"
	"github.com/nerve-dev/nerve/pkg/node"
)

func schema(s string) json.RawMessage { return json.RawMessage(s) }

// catalogue is a session's tools as a planner sees them.
func catalogue() *node.Toolset {
	return node.NewToolset([]node.NodeTools{
		{Node: "fs", Tools: []*mcp.Tool{
			{Name: "read_text_file", Description: "Read a text file.", InputSchema: schema(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "list_directory", Description: "List the files in a directory.", InputSchema: schema(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
		}},
		{Node: "mem", Tools: []*mcp.Tool{
			{Name: "create_entities", Description: "Create entities in the knowledge graph.", InputSchema: schema(`{"type":"object","properties":{"entities":{"type":"array"}},"required":["entities"]}`)},
		}},
		{Node: "weather", Tools: []*mcp.Tool{
			{Name: "forecast", Description: "The weather forecast for a city.", InputSchema: schema(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
		}},
	})
}

// check is the daemon's check of a graph, in process: graphlang.Check
// against the catalogue, its mistakes as Mistakes.
func check(ts *node.Toolset) func(context.Context, *Draft) ([]string, error) {
	tools := map[string]*mcp.Tool{}
	for _, e := range ts.Tools() {
		tools[e.Qualified] = e.Tool
	}
	return func(ctx context.Context, d *Draft) ([]string, error) {
		opts, _ := json.Marshal(graphlang.Options{Source: d.Graph})
		w, err := graphlang.Check(ctx, node.Spec{ID: d.Name, Kind: graphlang.Kind, Options: opts}, &node.Catalogue{Tools: tools})
		var m *graphlang.Mistakes
		if errors.As(err, &m) {
			return nil, &Mistakes{List: strings.Split(m.Err.Error(), "\n")}
		}
		return w, err
	}
}

// answers is a model that answers with each text in turn and records
// what it was sent.
type answers struct {
	texts  []string
	system string
	sent   [][]Message
}

func (a *answers) ask(_ context.Context, system string, msgs []Message) (string, error) {
	a.system = system
	a.sent = append(a.sent, append([]Message(nil), msgs...))
	if len(a.sent) > len(a.texts) {
		return "", errors.New("asked more often than scripted")
	}
	return a.texts[len(a.sent)-1], nil
}

const wrongGraph = "name: read-notes\n```yaml\nsteps:\n  read: {call: fs.read_file, args: {path: /notes/a.txt}}\n```\n"
const rightGraph = "name: read-notes\n```yaml\nsteps:\n  read: {call: fs.read_text_file, args: {path: /notes/a.txt}}\n  save: {call: mem.create_entities, args: {entities: [{name: a, entityType: note, observations: [\"${steps.read.text}\"]}]}}\n```\n"

// TestPlanRetries: a draft with mistakes goes back to the model with
// them; the second, right, draft is the plan.
func TestPlanRetries(t *testing.T) {
	ts := catalogue()
	m := &answers{texts: []string{wrongGraph, rightGraph}}
	var seen []string
	d, err := Plan(context.Background(), "read my note a.txt and remember it", &Options{Tools: ts, Ask: m.ask, Check: check(ts), Found: 3,
		Observe: func(n int, d *Draft, err error) { seen = append(seen, d.Name) }})
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "read-notes" || d.Kind != KindGraph || d.Def == nil || len(d.Def.Steps) != 2 || len(seen) != 2 {
		t.Fatalf("draft %+v, observed %v", d, seen)
	}
	if len(m.sent) != 2 || len(m.sent[1]) != 3 {
		t.Fatalf("the model was sent %d requests", len(m.sent))
	}
	back := m.sent[1][2]
	if back.Role != "user" || !strings.Contains(back.Text, "2:16: step read calls fs.read_file: no such tool") {
		t.Errorf("the mistakes sent back: %+v", back)
	}
	// The prompt holds the signatures of the tools the index found for the
	// sentence, not of the others.
	if !strings.Contains(m.system, "fs.read_text_file(path: str)") || strings.Contains(m.system, "weather.forecast(") || !strings.Contains(m.system, "weather (1 tools)") {
		t.Errorf("the system prompt:\n%s", m.system)
	}
}

// TestPlanGivesUp: a model whose drafts never pass is asked Attempts
// times; the failure holds the last draft's mistakes.
func TestPlanGivesUp(t *testing.T) {
	ts := catalogue()
	m := &answers{texts: []string{wrongGraph, wrongGraph, "no block at all"}}
	_, err := Plan(context.Background(), "read my note", &Options{Tools: ts, Ask: m.ask, Check: check(ts)})
	var f *Failed
	if !errors.As(err, &f) || f.Attempts != 3 || len(m.sent) != 3 || f.Draft != nil || !strings.Contains(err.Error(), "no fenced block") {
		t.Fatalf("err %v (%+v), %d requests", err, f, len(m.sent))
	}
}

// TestPlanScript: a script is drafted as a graph of one script step, and
// its mistakes go back at the script's own lines.
func TestPlanScript(t *testing.T) {
	ts := catalogue()
	bad := "name: Count Notes!\n```python\nnames = fs.list_directory(path=\"/notes\").splitlines()\nresult = gh.count(names)\n```"
	good := "```python\nnames = fs.list_directory(path=\"/notes\").splitlines()\nresult = len(names)\n```"
	m := &answers{texts: []string{bad, good}}
	d, err := Plan(context.Background(), "count my notes", &Options{Tools: ts, Ask: m.ask, Check: check(ts)})
	if err != nil {
		t.Fatal(err)
	}
	if d.Kind != KindScript || d.Name != "count-my-notes" || d.Def == nil || d.Def.Step("run").Script != "names = fs.list_directory(path=\"/notes\").splitlines()\nresult = len(names)\n" {
		t.Fatalf("draft %+v\n%s", d, d.Graph)
	}
	if back := m.sent[1][2].Text; !strings.Contains(back, "line 2, column 10: undefined: gh") {
		t.Errorf("the mistakes sent back: %s", back)
	}
	if d, _ := Read(bad, "x"); d.Name != "count-notes" {
		t.Errorf("the name line read as %q", d.Name)
	}
}
