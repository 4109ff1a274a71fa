package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/commander"
	"github.com/nerve-dev/nerve/internal/nodes/graph"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/client/mcpclient"
	"github.com/nerve-dev/nerve/pkg/node"
)

func graphCmd() *Command {
	from := &Flag{Name: "from", Value: "FILE", Usage: "the graph's definition, YAML or JSON (- reads standard input)"}
	return &Command{
		Name:    "graph",
		Summary: "add, export and run graphs: pipelines of tool calls that are nodes themselves",
		Usage:   "graph COMMAND",
		Help: `A graph is a node whose one tool, run, calls other nodes' tools in steps
(see docs/graphs.md). Run it like any node: ` + "`nerve call @review file=README.md`" + `.

Examples:
  nerve graph add review --from review.yaml
  nerve call @review ?
  nerve graph runs review`,
		Sub: []*Command{
			{Name: "add", Summary: "add a graph from a YAML or JSON file, checked against the session's tools", Usage: "graph add NAME --from FILE", Flags: []*Flag{from}, Run: runGraphAdd},
			{Name: "step", Summary: "add or replace one step, written as a Commander call; creates the graph if needed", Usage: "graph step GRAPH STEP @NODE TOOL [ARGS...]", RawArgs: true, Run: runGraphStep,
				Help: `ARGS are written as for the call itself (key=value or {JSON}); they may hold
${inputs.K} and ${steps.ID.text} references, and inputs referred to are
declared as strings. Policies (retry, when, foreach, ...) are added with
` + "`nerve graph export`" + `, an editor and ` + "`nerve graph edit`" + `.

Examples:
  nerve graph step review read @fs read_text_file 'path=${inputs.file}'
  nerve graph step review ask @claude ask_claude 'message=Review: ${steps.read.text}'`},
			{Name: "edit", Summary: "replace a graph's definition (checked before the old one goes)", Usage: "graph edit NAME --from FILE", Flags: []*Flag{from}, Complete: "node", Run: runGraphEdit},
			{Name: "rm", Aliases: []string{"remove"}, Summary: "remove a graph", Usage: "graph rm NAME", Complete: "node", Run: runGraphRm},
			{Name: "ls", Aliases: []string{"list"}, Summary: "list the session's graphs", Usage: "graph ls", Run: runGraphLs},
			{Name: "export", Summary: "print a graph's definition as it was written", Usage: "graph export NAME", Complete: "node", Run: runGraphExport},
			{Name: "runs", Summary: "list a graph's recent runs: state, time, each step", Usage: "graph runs NAME [-n N]", Complete: "node", Run: runGraphRuns,
				Flags: []*Flag{{Name: "lines", Short: "n", Value: "N", Usage: "show the newest N runs (default: all kept, up to 20)"}}},
			{Name: "show", Summary: "draw a graph's steps, or show one run: each step's state, time, arguments and result", Usage: "graph show NAME|RUN [--format text|dot|mermaid]", Run: runGraphShow,
				Flags: []*Flag{{Name: "format", Value: "FORMAT", Values: []string{"text", "dot", "mermaid"}, Usage: "text (default): a picture in the terminal; dot (Graphviz) or mermaid for docs and reviews"}}},
			{Name: "resume", Summary: "finish an interrupted run: only the steps that had not finished run", Usage: "graph resume RUN", Run: runGraphResume},
		},
	}
}

// filePos is the line:column at the start of a mistake.
var filePos = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d+:\d+: `) }) // compiled on first use, not at every start

// graphFileError is a graph definition with mistakes (exit 2).
type graphFileError struct{ msg string }

func (e *graphFileError) Error() string { return e.msg }
func (e *graphFileError) Unwrap() error { return client.ErrBadRequest }

// readGraph reads a graph file and checks it against the session.
func readGraph(ctx context.Context, env *Env, s *client.Session, name, file string) (string, error) {
	if file == "" {
		return "", &UsageError{Msg: "say where the definition is: --from FILE (YAML or JSON), or --from - for standard input"}
	}
	var r io.Reader = env.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("reading the graph: %w", err)
		}
		defer f.Close()
		r = f
	}
	// One byte over the limit is enough for graph.Parse to refuse it.
	src, err := io.ReadAll(io.LimitReader(r, graph.MaxSourceSize+1))
	if err != nil {
		return "", fmt.Errorf("reading the graph: %w", err)
	}
	return string(src), checkGraph(ctx, env, s, name, file, string(src))
}

// checkGraph checks a definition against the session: its format, its
// calls (tools, arguments) and cycles through other graphs. Mistakes are
// listed as FILE:LINE:COLUMN; warnings (a raw reference that reaches a
// shell) are printed on stderr.
func checkGraph(ctx context.Context, env *Env, s *client.Session, name, file, src string) error {
	places := func(err error) []string {
		lines := strings.Split(err.Error(), "\n")
		for i, l := range lines {
			if file == "" {
				// A definition the builder wrote: its places mean nothing to the person.
				lines[i] = "graph " + name + ": " + filePos().ReplaceAllString(l, "")
				continue
			}
			if l != "" && l[0] >= '0' && l[0] <= '9' {
				lines[i] = file + ":" + l
			} else {
				lines[i] = file + ": " + l
			}
		}
		return lines
	}
	prefix := func(err error) error {
		return &graphFileError{msg: fmt.Sprintf("graph %s has mistakes:\n  %s", name, strings.Join(places(err), "\n  "))}
	}
	// Every mistake at once: those of the file and those of its calls.
	d, perr := graph.ParseAll([]byte(src))
	if d == nil {
		return prefix(perr)
	}
	tools, down, err := graphCatalogue(ctx, s, name)
	if err != nil {
		return err
	}
	graphs, err := sessionGraphs(ctx, s, name)
	if err != nil {
		return err
	}
	var all graph.Errors
	var es graph.Errors
	if errors.As(perr, &es) {
		all = append(all, es...)
	}
	if errors.As(graph.CheckCalls(d, name, tools, graphs, down), &es) {
		all = append(all, es...)
	}
	if len(all) > 0 {
		return prefix(graph.Sorted(all))
	}
	warn := graph.ShellWarnings(d, tools)
	warn = append(warn, graph.DownWarnings(d, down)...)
	if len(warn) > 0 {
		for _, l := range places(warn) {
			fmt.Fprintf(env.Stderr, "warning: %s\n", l)
		}
	}
	return nil
}

// graphCatalogue is what a graph is checked against: the tools of every
// node but skip, whatever its state (a node that is starting or in ERROR
// still lists its tools, an MCP node its catalogue), and the nodes whose
// tools cannot be listed now, with why (their calls are not checked).
func graphCatalogue(ctx context.Context, s *client.Session, skip string) (map[string]*mcp.Tool, map[string]string, error) {
	toolset, err := mcpclient.Toolset(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	tools := map[string]*mcp.Tool{}
	listed := map[string]bool{}
	for _, t := range toolset {
		listed[t.Node] = true
		if t.Node != skip {
			tools[t.Qualified] = t.MCPTool
		}
	}
	infos, err := s.Nodes(ctx)
	if err != nil {
		return nil, nil, err
	}
	down := map[string]string{}
	for _, i := range infos {
		if i.ID == skip || listed[i.ID] {
			continue
		}
		ts, err := mcpclient.Tools(ctx, s, i.ID)
		if err != nil {
			down[i.ID] = node.NotReady(i.ID, i.State, i.Error).Error()
			continue
		}
		for _, t := range ts {
			tools[node.QualifiedName(i.ID, t.Name)] = t
		}
	}
	return tools, down, nil
}

// sessionGraphs returns the definitions of the session's graphs but skip.
func sessionGraphs(ctx context.Context, s *client.Session, skip string) (map[string]*graph.Def, error) {
	infos, err := s.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]*graph.Def{}
	for _, i := range infos {
		if i.Kind != graph.Kind || i.ID == skip {
			continue
		}
		src, err := graphSource(ctx, s, i.ID)
		if err != nil {
			continue
		}
		if d, err := graph.Parse([]byte(src)); err == nil {
			out[i.ID] = d
		}
	}
	return out, nil
}

func graphSource(ctx context.Context, s *client.Session, id string) (string, error) {
	d, err := s.Node(ctx, id)
	if err != nil {
		return "", err
	}
	if d.Spec.Kind != graph.Kind {
		return "", fmt.Errorf("node %q is a %s node, not a graph (list graphs with `nerve graph ls`)", id, d.Spec.Kind)
	}
	var o graph.Options
	if err := json.Unmarshal(d.Spec.Options, &o); err != nil {
		return "", fmt.Errorf("graph %q: %w", id, err)
	}
	return o.Source, nil
}

func graphSpec(name, src string) node.Spec {
	opts, _ := json.Marshal(graph.Options{Source: src})
	return node.Spec{ID: name, Kind: graph.Kind, Options: opts}
}

func oneArg(inv *Invocation, what string) (string, error) {
	if len(inv.Args) != 1 {
		return "", usagef(inv, "`nerve %s` takes one %s", strings.Join(inv.Path, " "), what)
	}
	return inv.Args[0], nil
}

func runGraphAdd(ctx context.Context, env *Env, inv *Invocation) error {
	name, err := oneArg(inv, "NAME")
	if err != nil {
		return err
	}
	if err := node.ValidateID(name); err != nil {
		return usagef(inv, "%v", err)
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	src, err := readGraph(ctx, env, s, name, inv.Flag("from"))
	if err != nil {
		return err
	}
	info, err := s.Add(ctx, graphSpec(name, src))
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, info)
	}
	fmt.Fprintf(env.Stderr, "graph %s added (%s); see its inputs with `nerve call @%s ?`\n", name, info.Summary, name)
	return nil
}

func runGraphEdit(ctx context.Context, env *Env, inv *Invocation) error {
	name, err := oneArg(inv, "NAME")
	if err != nil {
		return err
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	old, err := graphSource(ctx, s, name)
	if err != nil {
		return err
	}
	src, err := readGraph(ctx, env, s, name, inv.Flag("from"))
	if err != nil {
		return err
	}
	if err := s.Remove(ctx, name); err != nil {
		return err
	}
	info, err := s.Add(ctx, graphSpec(name, src))
	if err != nil {
		// Put the old one back: an edit that fails changes nothing.
		if _, err2 := s.Add(ctx, graphSpec(name, old)); err2 != nil {
			return errors.Join(err, fmt.Errorf("restoring the old definition: %w", err2))
		}
		return err
	}
	if env.JSON {
		return printJSON(env, info)
	}
	fmt.Fprintf(env.Stderr, "graph %s changed (%s)\n", name, info.Summary)
	return nil
}

func runGraphRm(ctx context.Context, env *Env, inv *Invocation) error {
	name, err := oneArg(inv, "NAME")
	if err != nil {
		return err
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	if _, err := graphSource(ctx, s, name); err != nil {
		return err
	}
	if err := s.Remove(ctx, name); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "graph %s removed\n", name)
	return nil
}

func runGraphLs(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 0 {
		return usagef(inv, "`nerve graph ls` takes no arguments")
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	infos, err := s.Nodes(ctx)
	if err != nil {
		return err
	}
	var graphs []node.Info
	for _, i := range infos {
		if i.Kind == graph.Kind {
			graphs = append(graphs, i)
		}
	}
	if env.JSON {
		if graphs == nil {
			graphs = []node.Info{}
		}
		return printJSON(env, graphs)
	}
	if len(graphs) == 0 {
		fmt.Fprintln(env.Stderr, "no graphs; add one with `nerve graph add NAME --from FILE`")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GRAPH\tSTATE\tSTEPS\tRUNS\tRUNNING\tLAST RUN")
	for _, i := range graphs {
		last := "-"
		if runs := runsOf(i); len(runs) > 0 {
			last = fmt.Sprintf("%s %s", runs[0].State, runs[0].Started.Local().Format("2006-01-02 15:04:05"))
		}
		// Runs are counted from the records, which outlive the daemon.
		count, _ := i.Details["run_count"].(float64)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", i.ID, i.State, strings.TrimSuffix(i.Summary, " steps"), int(count), i.InFlight, last)
	}
	return tw.Flush()
}

func runGraphExport(ctx context.Context, env *Env, inv *Invocation) error {
	name, err := oneArg(inv, "NAME")
	if err != nil {
		return err
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	src, err := graphSource(ctx, s, name)
	if err != nil {
		return err
	}
	if !strings.HasSuffix(src, "\n") {
		src += "\n"
	}
	_, err = io.WriteString(env.Stdout, src)
	return err
}

// runSummary is a run as a graph node's info lists it.
type runSummary struct {
	ID      string           `json:"id"`
	State   string           `json:"state"`
	Started time.Time        `json:"started"`
	Millis  float64          `json:"ms"`
	Error   string           `json:"error,omitempty"`
	Inputs  map[string]any   `json:"inputs,omitempty"`
	Output  string           `json:"output,omitempty"`
	Steps   []map[string]any `json:"steps"`
}

func runsOf(i node.Info) []runSummary {
	b, err := json.Marshal(i.Details["runs"])
	if err != nil {
		return nil
	}
	var runs []runSummary
	_ = json.Unmarshal(b, &runs)
	return runs
}

func runGraphRuns(ctx context.Context, env *Env, inv *Invocation) error {
	name, err := oneArg(inv, "NAME")
	if err != nil {
		return err
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	d, err := startedNode(ctx, s, name)
	if err != nil {
		return err
	}
	if d.Spec.Kind != graph.Kind {
		return fmt.Errorf("node %q is a %s node, not a graph", name, d.Spec.Kind)
	}
	runs := runsOf(d.Info)
	if v := inv.Flag("lines"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return usagef(inv, "-n takes a number of runs ≥ 1, not %q", v)
		}
		runs = runs[:min(n, len(runs))]
	}
	if env.JSON {
		if runs == nil {
			runs = []runSummary{}
		}
		return printJSON(env, runs)
	}
	if len(runs) == 0 {
		fmt.Fprintf(env.Stderr, "graph %s has not run yet; run it with `nerve call @%s ...`\n", name, name)
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATE\tSTARTED\tTIME\tSTEPS")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.State, r.Started.Local().Format("2006-01-02 15:04:05"),
			roundDuration(time.Duration(r.Millis*float64(time.Millisecond))), stepStates(r.Steps))
	}
	return tw.Flush()
}

// startedNode returns node id once it has started: a graph reads its runs
// when it starts, so right after a daemon start (the session is restored
// in the background) a STARTING graph would list none. Listing its tools
// waits for the start; its error (an unknown node, a node in ERROR) is
// left for s.Node to report.
func startedNode(ctx context.Context, s *client.Session, id string) (api.NodeDetail, error) {
	_, _ = mcpclient.Tools(ctx, s, id)
	return s.Node(ctx, id)
}

// stepStates counts a run's steps by state: "3 finished, 1 failed".
func stepStates(steps []map[string]any) string {
	var order []string
	count := map[string]int{}
	for _, st := range steps {
		s, _ := st["state"].(string)
		if count[s] == 0 {
			order = append(order, s)
		}
		count[s]++
	}
	parts := make([]string, len(order))
	for i, s := range order {
		parts[i] = fmt.Sprintf("%d %s", count[s], s)
	}
	return strings.Join(parts, ", ")
}

// findRun finds a run by id; the graph's name is the id's first part.
func findRun(ctx context.Context, env *Env, inv *Invocation) (*client.Session, string, *runSummary, error) {
	id, err := oneArg(inv, "RUN (see `nerve graph runs NAME`)")
	if err != nil {
		return nil, "", nil, err
	}
	name, _, ok := strings.Cut(id, ".")
	if !ok {
		return nil, "", nil, usagef(inv, "%q is not a run id; run ids look like review.20260101-120000.000-abcdef (see `nerve graph runs NAME`)", id)
	}
	s, err := env.session(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	d, err := startedNode(ctx, s, name)
	if err != nil {
		return nil, "", nil, err
	}
	for _, r := range runsOf(d.Info) {
		if r.ID == id {
			return s, name, &r, nil
		}
	}
	return nil, "", nil, fmt.Errorf("no recent run %q of graph %s: %w (see `nerve graph runs %s`)", id, name, client.ErrBadRequest, name)
}

func runGraphShow(ctx context.Context, env *Env, inv *Invocation) error {
	format := inv.Flag("format")
	switch format {
	case "", "text", "dot", "mermaid":
	default:
		return usagef(inv, "--format is text, dot or mermaid, not %q", format)
	}
	if len(inv.Args) == 1 && !strings.Contains(inv.Args[0], ".") {
		// A graph's name: its picture.
		s, err := env.session(ctx)
		if err != nil {
			return err
		}
		name := inv.Args[0]
		src, err := graphSource(ctx, s, name)
		if err != nil {
			return err
		}
		d, err := graph.Parse([]byte(src))
		if err != nil {
			return fmt.Errorf("graph %s: %w", name, err)
		}
		switch format {
		case "dot":
			_, err = io.WriteString(env.Stdout, graphDot(name, d))
		case "mermaid":
			_, err = io.WriteString(env.Stdout, graphMermaid(d))
		default:
			drawGraph(env.Stdout, name, d, nil)
		}
		return err
	}
	s, name, r, err := findRun(ctx, env, inv)
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, r)
	}
	var def *graph.Def
	if src, err := graphSource(ctx, s, name); err == nil {
		def, _ = graph.Parse([]byte(src))
	}
	if format == "dot" || format == "mermaid" {
		if def == nil {
			return fmt.Errorf("graph %s is gone or changed so it cannot be read; `nerve graph export %s` shows it", name, name)
		}
		if format == "dot" {
			_, err = io.WriteString(env.Stdout, graphDot(name, def))
		} else {
			_, err = io.WriteString(env.Stdout, graphMermaid(def))
		}
		return err
	}
	if def != nil {
		defer drawGraph(env.Stdout, name, def, runStates(r))
	}
	fmt.Fprintf(env.Stdout, "run %s: %s in %s (started %s)\n", r.ID, r.State,
		roundDuration(time.Duration(r.Millis*float64(time.Millisecond))), r.Started.Local().Format("2006-01-02 15:04:05"))
	if len(r.Inputs) > 0 {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // `>` stays `>`
		_ = enc.Encode(r.Inputs)
		fmt.Fprintf(env.Stdout, "inputs: %s", b.String())
	}
	if r.Error != "" {
		fmt.Fprintf(env.Stdout, "error: %s\n", r.Error)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATE\tTIME\tARGS\tRESULT")
	for _, st := range r.Steps {
		ms, _ := st["ms"].(float64)
		res, _ := st["text"].(string)
		if e, ok := st["error"].(string); ok {
			res = "error: " + e
		}
		args, _ := st["args"].(string)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", st["id"], st["state"], roundDuration(time.Duration(ms*float64(time.Millisecond))),
			oneLine(args, 60), oneLine(res, 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Output != "" {
		fmt.Fprintf(env.Stdout, "output: %s\n", oneLine(r.Output, 200))
	}
	return nil
}

func oneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", "⏎")
	if len([]rune(s)) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return s
}

func runGraphResume(ctx context.Context, env *Env, inv *Invocation) error {
	s, name, r, err := findRun(ctx, env, inv)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(r.Inputs)
	if r.Inputs == nil {
		b = []byte("{}")
	}
	return callAndPrint(ctx, env, s, name, graph.ToolName, b, map[string]any{graph.MetaResume: r.ID})
}

// callAndPrint calls a tool as `nerve call` does, step lines on stderr.
func callAndPrint(ctx context.Context, env *Env, s *client.Session, id, tool string, args json.RawMessage, meta map[string]any) error {
	res, err := mcpclient.CallMeta(ctx, s, id, tool, args, meta, func(l api.CallLine) { showCallLine(env, id, l) })
	if err != nil {
		return err
	}
	return printCallResult(env, res)
}

// graphStepLine is one line for a graph's step event: "✓ read 12ms".
func graphStepLine(data []byte) string {
	var ev graph.StepEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return string(data)
	}
	took := ""
	if ev.Millis > 0 {
		took = " " + roundDuration(time.Duration(ev.Millis*float64(time.Millisecond)))
	}
	switch ev.State {
	case graph.StateStarted:
		return "▸ " + ev.Step + " started"
	case graph.StateFinished:
		return "✓ " + ev.Step + took
	case graph.StateRetried:
		return fmt.Sprintf("↻ %s attempt %d after: %s", ev.Step, ev.Attempt, firstLine(ev.Error))
	case graph.StateSkipped:
		line := "⤼ " + ev.Step + " skipped"
		switch ev.Reason {
		case "when":
			line += " (when was false)"
		case "resumed":
			line += " (finished before; resumed)"
		case "on_error":
			line += " (failed; default used: " + firstLine(ev.Error) + ")"
		}
		return line
	case graph.StateFailed:
		return "✗ " + ev.Step + took + ": " + firstLine(ev.Error)
	}
	return ev.Step + " " + ev.State
}

func runGraphStep(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) < 4 || !strings.HasPrefix(inv.Args[2], "@") {
		return usagef(inv, "`nerve graph step` needs GRAPH STEP @NODE TOOL [ARGS...], e.g. `nerve graph step review read @fs read_text_file 'path=${inputs.file}'`")
	}
	name, id := inv.Args[0], inv.Args[1]
	if err := node.ValidateID(name); err != nil {
		return usagef(inv, "%v", err)
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	// The step's words are read back exactly as `nerve call` reads its
	// words (the REPL's `:graph step` gives the words of its line), so
	// `message="a b"` and 'message=Review: ${steps.read.text}' hold one
	// value each (issue 17, item 6).
	line := callLine(inv.Args[2:])
	nodeID := lineNode(line)
	tools, err := mcpclient.Tools(ctx, s, nodeID)
	if err != nil {
		return err
	}
	ln, err := commander.Parse(line, commander.NewIndex(map[string][]*mcp.Tool{nodeID: tools}), nil)
	if err != nil {
		return usagef(inv, "%v", err)
	}
	if ln.Kind != commander.Call {
		return usagef(inv, "give the step's call as @NODE TOOL ARGS (as you would call it), not %q", line)
	}
	old, err := graphSource(ctx, s, name)
	exists := err == nil
	if err != nil && !errors.Is(err, client.ErrNodeNotFound) {
		return err
	}
	src, err := graph.AddStep(old, id, ln.Node+"."+ln.Tool, ln.Args)
	if err != nil {
		return usagef(inv, "%v", err)
	}
	if err := checkGraph(ctx, env, s, name, "", src); err != nil {
		return err
	}
	if exists {
		if err := s.Remove(ctx, name); err != nil {
			return err
		}
	}
	info, err := s.Add(ctx, graphSpec(name, src))
	if err != nil {
		if exists {
			if _, err2 := s.Add(ctx, graphSpec(name, old)); err2 != nil {
				return errors.Join(err, fmt.Errorf("restoring the old definition: %w", err2))
			}
		}
		return err
	}
	if env.JSON {
		return printJSON(env, info)
	}
	fmt.Fprintf(env.Stderr, "graph %s: step %s calls %s.%s (%s)\n", name, id, ln.Node, ln.Tool, info.Summary)
	return nil
}
