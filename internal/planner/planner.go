// Package planner drafts a graph or a code-mode script from a sentence
// (`nerve plan`, issue 30): it finds the session's tools that fit the
// sentence with the discovery index (internal/toolsearch), shows a model
// their signatures (generated from their schemas by internal/codemode)
// and the graph language, reads the draft out of the model's answer and
// has it checked as any graph is (its host's Check: the daemon's
// add-time checks); a draft with mistakes goes back to the model with
// them, a bounded number of times. A script is drafted as a graph of
// one script step, so both are saved, checked and run the same way.
//
// It talks to no model and no daemon itself: its host (internal/cli)
// gives it Ask (an llm node's sampling) and Check. It imports
// internal/codemode, internal/graphlang, internal/toolsearch and pkg/node.
package planner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"

	"github.com/nerve-dev/nerve/internal/codemode"
	"github.com/nerve-dev/nerve/internal/graphlang"
	"github.com/nerve-dev/nerve/internal/toolsearch"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Defaults of Options.
const (
	DefaultAttempts = 3
	DefaultFound    = 12
)

// Kinds of Draft.
const (
	KindGraph  = "graph"
	KindScript = "script"
)

// Message is one message of the conversation with the model.
type Message struct {
	Role string // "user" or "assistant"
	Text string
}

// Options are what a plan needs from its host.
type Options struct {
	// Tools is the session's catalogue: the tools a draft may call.
	Tools *node.Toolset
	// Search, if set, ranks the catalogue's tools for words and returns
	// the qualified names of at most limit, best first: the session's
	// own discovery index (search_tools'). Nil: an index of Tools.
	Search func(ctx context.Context, words string, limit int) ([]string, error)
	// Ask sends the model one request — the system prompt and the
	// conversation so far — and returns the text of its answer.
	Ask func(ctx context.Context, system string, msgs []Message) (string, error)
	// Check checks a draft's graph (Draft.Graph, named Draft.Name) as
	// the daemon checks any graph it adds: its warnings, or a *Mistakes
	// error (which goes back to the model) or any other error (which
	// ends the plan).
	Check func(ctx context.Context, d *Draft) ([]string, error)
	// Attempts bounds the drafts (0: DefaultAttempts).
	Attempts int
	// Found bounds the tools whose signatures the model is shown (0:
	// DefaultFound).
	Found int
	// Observe, if set, hears of each draft as it is checked: err is its
	// mistakes (nil when it passed).
	Observe func(attempt int, d *Draft, err error)
}

// Draft is what the model wrote.
type Draft struct {
	// Name is the graph's name: the model's suggestion, made a valid
	// node id (the host may change it).
	Name string
	// Kind is KindGraph or KindScript.
	Kind string
	// Source is the graph (YAML) or the script (Starlark) as written.
	Source string
	// Graph is the graph to check and save: Source, or the script as a
	// graph of one script step.
	Graph string
	// Def is Graph parsed, once it parses.
	Def *graphlang.Def
	// Warnings are the checks' warnings of a draft that passed.
	Warnings []string
	// scriptLine is the line of Graph where a script's first line is.
	scriptLine int
}

// scriptIndent is the columns before a script's lines in its graph.
const scriptIndent = 6

// Places puts a script draft's mistakes at the script's own lines: a
// check places them in the graph that wraps it ("7:16: step run: script:
// undefined: gh" is "line 3, column 10: undefined: gh").
func (d *Draft) Places(mistakes []string) []string {
	if d == nil || d.Kind != KindScript {
		return mistakes
	}
	out := make([]string, len(mistakes))
	for i, m := range mistakes {
		out[i] = m
		loc := place().FindStringSubmatchIndex(m)
		if loc == nil {
			continue
		}
		line, _ := strconv.Atoi(m[loc[2]:loc[3]])
		col, _ := strconv.Atoi(m[loc[4]:loc[5]])
		if line >= d.scriptLine && d.scriptLine > 0 {
			out[i] = fmt.Sprintf("line %d, column %d: %s", line-d.scriptLine+1, max(col-scriptIndent, 1), m[loc[1]:])
		} else {
			out[i] = m[loc[1]:]
		}
	}
	return out
}

// Mistakes is a draft refused by the checks: what goes back to the model.
type Mistakes struct{ List []string }

func (m *Mistakes) Error() string { return strings.Join(m.List, "\n") }

// Failed is a plan that ran out of attempts: the last draft (nil when no
// answer held one) and its mistakes.
type Failed struct {
	Attempts int
	Draft    *Draft
	Mistakes []string
}

func (f *Failed) Error() string {
	return fmt.Sprintf("no draft passed the checks in %d attempts; the last one's mistakes:\n  %s", f.Attempts, strings.Join(f.Mistakes, "\n  "))
}

// Plan has the model draft a graph or a script for sentence until one
// passes the checks, or Options.Attempts are used: then a *Failed.
func Plan(ctx context.Context, sentence string, o *Options) (*Draft, error) {
	if o == nil || o.Ask == nil || o.Check == nil || o.Tools == nil {
		return nil, errors.New("planner: Options need Tools, Ask and Check")
	}
	attempts := o.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	found := o.Found
	if found <= 0 {
		found = DefaultFound
	}
	picked, err := find(ctx, o, sentence, found)
	if err != nil {
		return nil, fmt.Errorf("finding the tools for %q: %w", sentence, err)
	}
	system := Prompt(o.Tools, picked)
	msgs := []Message{{Role: "user", Text: sentence}}
	fail := &Failed{}
	for try := 1; try <= attempts; try++ {
		answer, err := o.Ask(ctx, system, msgs)
		if err != nil {
			return nil, fmt.Errorf("asking the model for draft %d: %w", try, err)
		}
		msgs = append(msgs, Message{Role: "assistant", Text: answer})
		d, err := Read(answer, sentence)
		if err == nil {
			d.Warnings, err = o.Check(ctx, d)
		}
		var m *Mistakes
		if errors.As(err, &m) {
			m.List = d.Places(m.List)
		}
		if o.Observe != nil {
			o.Observe(try, d, err)
		}
		if err == nil {
			return d, nil
		}
		if m == nil {
			return nil, err
		}
		fail.Attempts, fail.Draft, fail.Mistakes = try, d, m.List
		msgs = append(msgs, Message{Role: "user", Text: "The draft has mistakes:\n- " + strings.Join(m.List, "\n- ") +
			"\nFix them and answer again in the same form: the name line, then one fenced block."})
	}
	return nil, fail
}

// find returns the names of the found tools whose signatures the model
// is shown: those the index finds for sentence, then others in the
// session's order (a small session's every tool).
func find(ctx context.Context, o *Options, sentence string, found int) ([]string, error) {
	var names []string
	if o.Search != nil {
		var err error
		if names, err = o.Search(ctx, sentence, found); err != nil {
			return nil, err
		}
	} else {
		docs := make([]toolsearch.Doc, 0, o.Tools.Len())
		for _, e := range o.Tools.Tools() {
			docs = append(docs, toolsearch.Doc{Name: e.Qualified, Node: e.Node, Tool: e.Tool})
		}
		for _, h := range toolsearch.New(docs).Find(ctx, sentence, &toolsearch.Options{Limit: found}).Hits {
			names = append(names, h.Name)
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if te, ok := o.Tools.Lookup(n); ok && !seen[te.Qualified] && len(out) < found {
			seen[te.Qualified] = true
			out = append(out, te.Qualified)
		}
	}
	for _, e := range o.Tools.Tools() {
		if len(out) >= found {
			break
		}
		if !seen[e.Qualified] {
			seen[e.Qualified] = true
			out = append(out, e.Qualified)
		}
	}
	return out, nil
}

// Prompt is the system prompt: the task, the graph language in short,
// the script dialect, the signatures of the picked tools (qualified
// names) and the nodes of the others.
func Prompt(ts *node.Toolset, picked []string) string {
	pick := map[string]bool{}
	for _, n := range picked {
		pick[n] = true
	}
	run := codemode.Tool(ts, &codemode.ToolOptions{Visible: func(id string, t *mcp.Tool) bool {
		return pick[node.QualifiedName(id, t.Name)]
	}})
	others := map[string]int{}
	var order []string
	for _, e := range ts.Tools() {
		if pick[e.Qualified] {
			continue
		}
		if others[e.Node] == 0 {
			order = append(order, e.Node)
		}
		others[e.Node]++
	}
	var b strings.Builder
	b.WriteString(promptHead)
	b.WriteString("\n\n## Scripts\n\n")
	b.WriteString(run.Description)
	if len(order) > 0 {
		b.WriteString("\n\nOther nodes, whose tools did not match the request (call them only if needed, as node.tool):")
		for _, n := range order {
			fmt.Fprintf(&b, " %s (%d tools)", n, others[n])
		}
	}
	return b.String()
}

const promptHead = `You turn a person's request into a plan that nerve runs: a graph (YAML) of tool calls, or a script (Starlark) that calls tools. Use only the tools listed below, by the names given.

Answer with exactly two things:
name: a-short-name   (lower-case letters, digits and '-')
then one fenced block: ` + "```yaml" + ` for a graph, or ` + "```python" + ` for a script.
Prefer a graph when the steps are a fixed chain of calls; a script when the work loops, filters or computes.

## Graphs

inputs:                        # optional: what the person gives each run
  dir: {type: string, description: the folder}
steps:
  list: {call: fs.list_directory, args: {path: "${inputs.dir}"}}
  save: {call: mem.create_entities, args: {entities: [{name: report, entityType: note, observations: ["${steps.list.text}"]}]}}
  each: {call: fs.read_text_file, foreach: "${steps.list.structured.files}", args: {path: "${item}"}}
  count:                       # a script step: reads inputs["dir"] and steps["list"] as data
    script: |
      result = len(steps["list"]["text"].splitlines())
output: "${steps.count.text}"

References: ${inputs.K}; ${steps.ID.text} (text result), ${steps.ID.structured} (structured result, or JSON text read), ${steps.ID.structured.a.b[0]}; ${item} in a foreach step. A step waits for the steps it references (and those in after: [ID]). Other fields: when: "${steps.x.is_error} == false", retry: {attempts: 3, backoff: 2s}, timeout: 30s, on_error: continue. Arguments must match each tool's parameters. A value never becomes part of a shell command: pass it as its own argument.`

// Compiled on first use, not at every start of nerve (STYLE.md 16).
var (
	// fence is a fenced block: its language and its text.
	fence = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("(?s)```([A-Za-z]*)[^\n]*\n(.*?)\n?```") })
	// nameLine is the answer's name line.
	nameLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile("(?m)^\\s*\\**name\\**\\s*:\\s*`?([^`\\n]+?)`?\\s*$")
	})
	// place is a mistake's LINE:COLUMN in a graph.
	place = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\d+):(\d+): (?:step run: script: )?`) })
)

// Read reads a draft out of the model's answer: its name line and its
// first fenced block (yaml, json, python, starlark; without a language,
// a mapping with steps is a graph). An answer without a block is a
// *Mistakes.
func Read(answer, sentence string) (*Draft, error) {
	m := fence().FindStringSubmatch(answer)
	if m == nil {
		return nil, &Mistakes{List: []string{"the answer has no fenced block: write the name line, then the graph in ```yaml … ``` or the script in ```python … ```"}}
	}
	lang, body := strings.ToLower(m[1]), m[2]
	d := &Draft{Source: body}
	switch lang {
	case "yaml", "yml", "json":
		d.Kind = KindGraph
	case "python", "py", "starlark", "star", "bzl":
		d.Kind = KindScript
	default:
		var probe map[string]any
		if yaml.Unmarshal([]byte(body), &probe) == nil && probe["steps"] != nil {
			d.Kind = KindGraph
		} else {
			d.Kind = KindScript
		}
	}
	name := ""
	if n := nameLine().FindStringSubmatch(answer[:strings.Index(answer, m[0])]); n != nil {
		name = n[1]
	}
	d.Name = nodeName(name, sentence)
	d.Graph = body
	if d.Kind == KindScript {
		g, line, err := ScriptGraph(sentence, body)
		if err != nil {
			return nil, err
		}
		d.Graph, d.scriptLine = g, line
	}
	if def, err := graphlang.Parse([]byte(d.Graph)); err == nil {
		d.Def = def
	}
	return d, nil
}

// ScriptGraph is a graph of one script step, "run", that runs script;
// the sentence is its description. It is written by the YAML library,
// the script as a literal block, so the script's lines keep their places:
// line is the graph's line of the script's first.
func ScriptGraph(sentence, script string) (graph string, line int, err error) {
	sentence = strings.Join(strings.Fields(sentence), " ")
	str := func(s string, style yaml.Style) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: style}
	}
	step := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{str("script", 0), str(strings.TrimRight(script, "\n")+"\n", yaml.LiteralStyle)}}
	root := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		str("description", 0), str(sentence, 0),
		str("steps", 0), {Kind: yaml.MappingNode, Content: []*yaml.Node{str("run", 0), step}},
	}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return "", 0, fmt.Errorf("writing the script as a graph: %w", err)
	}
	b := buf.Bytes()
	for i, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "    script: |") {
			line = i + 2
			break
		}
	}
	return string(b), line, nil
}

// nodeName is name as a node id, or one made of the sentence's first
// words when name has none.
func nodeName(name, sentence string) string {
	id := slug(name)
	if id == "" {
		words := strings.Fields(sentence)
		id = slug(strings.Join(words[:min(len(words), 4)], "-"))
	}
	if id == "" {
		id = "plan"
	}
	return id
}

func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	id := strings.TrimRight(b.String(), "-")
	if len(id) > 40 {
		id = strings.TrimRight(id[:40], "-")
	}
	return id
}
