package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/callview"
	"github.com/nerve-dev/nerve/internal/commander"
	"github.com/nerve-dev/nerve/internal/graphdraw"
	"github.com/nerve-dev/nerve/internal/graphlang"
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
Several steps may be added at once (scripts, terminals): none is lost.

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

// readGraph reads a graph's definition from a file (- for stdin). The
// daemon checks it (graphlang.Check): this only reads.
func readGraph(env *Env, file string) (string, error) {
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
	// One byte over the limit is enough for the daemon to refuse it.
	src, err := io.ReadAll(io.LimitReader(r, graphlang.MaxSourceSize+1))
	if err != nil {
		return "", fmt.Errorf("reading the graph: %w", err)
	}
	return string(src), nil
}

// graphPlaces puts the file's name before each LINE:COLUMN of the daemon's
// report (mistakes or warnings), as compilers print them. A definition
// the builder wrote (no file) has places that mean nothing to the person:
// "graph NAME: ..." instead.
func graphPlaces(name, file string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		switch {
		case file == "":
			out[i] = "graph " + name + ": " + filePos().ReplaceAllString(l, "")
		case l != "" && l[0] >= '0' && l[0] <= '9':
			out[i] = file + ":" + l
		default:
			out[i] = file + ": " + l
		}
	}
	return out
}

// graphMistakes is the daemon's refusal of a definition (graphlang.Mistakes:
// "graph NAME has mistakes:" and a line per mistake) with file's places.
func graphMistakes(name, file string, err error) error {
	var ce *client.Error
	head := "graph " + name + " has mistakes:\n  "
	if !errors.As(err, &ce) || !errors.Is(err, client.ErrBadRequest) || !strings.HasPrefix(ce.Message, head) {
		return err
	}
	lines := graphPlaces(name, file, strings.Split(strings.TrimPrefix(ce.Message, head), "\n  "))
	return &graphFileError{msg: head + strings.Join(lines, "\n  ")}
}

// putGraph adds graph name, or replaces it in one step (replace) if its
// spec still has tag (graphSourceTag; "" checks nothing), and prints the
// warnings of the daemon's check on stderr. A graph someone changed
// since tag was read is left as it is: the error matches
// client.ErrChanged.
func putGraph(ctx context.Context, env *Env, s *client.Session, name, file, src string, replace bool, tag string) (node.Info, error) {
	var resp api.NodeResponse
	var err error
	if replace {
		resp, _, err = s.ReplaceIf(ctx, graphSpec(name, src), tag)
	} else {
		resp, err = s.AddNode(ctx, graphSpec(name, src))
	}
	if err != nil {
		return node.Info{}, graphMistakes(name, file, err)
	}
	for _, l := range graphPlaces(name, file, resp.Warnings) {
		fmt.Fprintf(env.Stderr, "warning: %s\n", l)
	}
	return resp.Info, nil
}

func graphSource(ctx context.Context, s *client.Session, id string) (string, error) {
	src, _, err := graphSourceTag(ctx, s, id)
	return src, err
}

// graphSourceTag is graphSource with the tag of the spec it was read
// from, for putGraph.
func graphSourceTag(ctx context.Context, s *client.Session, id string) (src, tag string, err error) {
	d, tag, err := s.NodeTag(ctx, id)
	if err != nil {
		return "", "", err
	}
	if d.Spec.Kind != graphlang.Kind {
		return "", "", fmt.Errorf("node %q is a %s node, not a graph (list graphs with `nerve graph ls`)", id, d.Spec.Kind)
	}
	var o graphlang.Options
	if err := json.Unmarshal(d.Spec.Options, &o); err != nil {
		return "", "", fmt.Errorf("graph %q: %w", id, err)
	}
	return o.Source, tag, nil
}

func graphSpec(name, src string) node.Spec {
	opts, _ := json.Marshal(graphlang.Options{Source: src})
	return node.Spec{ID: name, Kind: graphlang.Kind, Options: opts}
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
	file := inv.Flag("from")
	src, err := readGraph(env, file)
	if err != nil {
		return err
	}
	info, err := putGraph(ctx, env, s, name, file, src, false, "")
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
	_, tag, err := graphSourceTag(ctx, s, name)
	if err != nil {
		return err // no such graph, or not a graph
	}
	file := inv.Flag("from")
	src, err := readGraph(env, file)
	if err != nil {
		return err
	}
	// One request: the daemon checks the definition and replaces the old
	// one in one step, or changes nothing — as when someone else changed
	// the graph since it was read above.
	info, err := putGraph(ctx, env, s, name, file, src, true, tag)
	if errors.Is(err, client.ErrChanged) {
		return fmt.Errorf("%w (running it again puts your definition in place of their change: compare it with `nerve graph export %s` first)", err, name)
	}
	if err != nil {
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
		if i.Kind != graphlang.Kind {
			continue
		}
		if i.State == node.Created || i.State == node.Starting {
			// Right after a daemon start the session is restored in the
			// background: a graph about to start is shown once it has
			// (at once; a graph's start reads only its run records).
			if d, err := startedNode(ctx, s, i.ID); err == nil {
				i = d.Info
			}
		}
		graphs = append(graphs, i)
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
	ID      string         `json:"id"`
	State   string         `json:"state"`
	Started time.Time      `json:"started"`
	Millis  float64        `json:"ms"`
	Error   string         `json:"error,omitempty"`
	Inputs  map[string]any `json:"inputs,omitempty"`
	Output  string         `json:"output,omitempty"`
	// Steps are the first 200 of the run's steps; StepCount is how many it
	// has, StepStates all of them counted by state.
	Steps      []map[string]any `json:"steps"`
	StepCount  int              `json:"step_count,omitempty"`
	StepStates map[string]int   `json:"step_states,omitempty"`
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
	if d.Spec.Kind != graphlang.Kind {
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
			roundDuration(time.Duration(r.Millis*float64(time.Millisecond))), stepStates(r))
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

// stepStates counts a run's steps by state: "3 finished, 1 failed", in
// the order the states first come among the steps shown. A summary lists
// its first 200 steps and counts them all (StepStates); one from an older
// daemon is counted from the steps it lists.
func stepStates(r runSummary) string {
	var order []string
	count := map[string]int{}
	for _, st := range r.Steps {
		s, _ := st["state"].(string)
		if count[s] == 0 {
			order = append(order, s)
		}
		count[s]++
	}
	if r.StepStates != nil {
		count = r.StepStates
		for _, s := range slices.Sorted(maps.Keys(count)) {
			if !slices.Contains(order, s) {
				order = append(order, s)
			}
		}
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
		d, err := graphlang.Parse([]byte(src))
		if err != nil {
			return fmt.Errorf("graph %s: %w", name, err)
		}
		switch format {
		case "dot":
			_, err = io.WriteString(env.Stdout, graphdraw.Dot(name, d))
		case "mermaid":
			_, err = io.WriteString(env.Stdout, graphdraw.Mermaid(d))
		default:
			graphdraw.Text(env.Stdout, name, d, nil)
		}
		return err
	}
	if env.JSON && len(inv.Args) == 1 {
		// The run's whole record, as the graph keeps it (issue 17, item 9).
		id := inv.Args[0]
		name, _, _ := strings.Cut(id, ".")
		s, err := env.session(ctx)
		if err != nil {
			return err
		}
		rec, err := s.RunRecord(ctx, name, id)
		if err != nil {
			return err
		}
		return printJSON(env, rec)
	}
	s, name, r, err := findRun(ctx, env, inv)
	if err != nil {
		return err
	}
	var def *graphlang.Def
	if src, err := graphSource(ctx, s, name); err == nil {
		def, _ = graphlang.Parse([]byte(src))
	}
	if format == "dot" || format == "mermaid" {
		if def == nil {
			return fmt.Errorf("graph %s is gone or changed so it cannot be read; `nerve graph export %s` shows it", name, name)
		}
		if format == "dot" {
			_, err = io.WriteString(env.Stdout, graphdraw.Dot(name, def))
		} else {
			_, err = io.WriteString(env.Stdout, graphdraw.Mermaid(def))
		}
		return err
	}
	if def != nil {
		defer graphdraw.Text(env.Stdout, name, def, runStates(r))
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
	return callAndPrint(ctx, env, s, name, graphlang.ToolName, b, map[string]any{api.MetaResume: r.ID})
}

// callAndPrint calls a tool as `nerve call` does, step lines on stderr.
func callAndPrint(ctx context.Context, env *Env, s *client.Session, id, tool string, args json.RawMessage, meta map[string]any) error {
	res, err := mcpclient.CallMeta(ctx, s, id, tool, args, meta, func(l api.CallLine) { showCallLine(env, &callview.Steps{}, id, l) })
	if err != nil {
		return err
	}
	return printCallResult(env, res)
}

// graphStepRetries is how many times `graph step` reads a graph again
// and adds its step anew after someone else changed it, before it gives
// up. Each lost try is another command's won one, so up to
// graphStepRetries+1 commands at once on one graph all succeed.
const graphStepRetries = 30

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
	// Read, add the step, replace if the graph is still the one read: a
	// graph someone changed meanwhile (another `graph step`) is read
	// again and gets the step added to their version, so no step is lost.
	var info node.Info
	for try := 0; ; try++ {
		old, tag, err := graphSourceTag(ctx, s, name)
		exists := err == nil
		if err != nil && !errors.Is(err, client.ErrNodeNotFound) {
			return err
		}
		src, err := graphlang.AddStep(old, id, ln.Node+"."+ln.Tool, ln.Args)
		if err != nil {
			return usagef(inv, "%v", err)
		}
		info, err = putGraph(ctx, env, s, name, "", src, exists, tag)
		if err == nil {
			break
		}
		// Changed since read, or made since found missing.
		if !errors.Is(err, client.ErrChanged) && (exists || !errors.Is(err, client.ErrExists)) {
			return err
		}
		if try == graphStepRetries {
			return fmt.Errorf("step %s was not added: graph %s changed each of the %d times it was read, as others changed it meanwhile: %w", id, name, try+1, err)
		}
	}
	if env.JSON {
		return printJSON(env, info)
	}
	fmt.Fprintf(env.Stderr, "graph %s: step %s calls %s.%s (%s)\n", name, id, ln.Node, ln.Tool, info.Summary)
	return nil
}

// runStates is each step's "state time" in a run.
func runStates(r *runSummary) map[string]string {
	out := map[string]string{}
	for _, st := range r.Steps {
		id, _ := st["id"].(string)
		state, _ := st["state"].(string)
		ms, _ := st["ms"].(float64)
		if ms > 0 {
			state += " " + roundDuration(time.Duration(ms*float64(time.Millisecond)))
		}
		out[id] = state
	}
	return out
}
