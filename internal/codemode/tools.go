package codemode

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/nerve-dev/nerve/internal/suggest"
	"github.com/nerve-dev/nerve/pkg/node"
)

// scriptEnv is what a script sees: the builtins and one value per node
// that has a visible tool, named by its id (a '-' read as '_'); a node
// whose id is a builtin's name, or a tool whose name is not an
// identifier even so, is reached with tool("node.tool").
type scriptEnv struct {
	r           *run
	ts          *node.Toolset
	visible     func(string, *mcp.Tool) bool
	predeclared starlark.StringDict
	nodes       map[string]*nodeValue // by identifier
	names       []string              // the visible tools' qualified names
}

func newScriptEnv(r *run, ts *node.Toolset, visible func(string, *mcp.Tool) bool) *scriptEnv {
	e := &scriptEnv{r: r, ts: ts, visible: visible, nodes: map[string]*nodeValue{}}
	r.env = e
	e.predeclared = r.builtins()
	for _, bd := range bind(ts, visible) {
		e.names = append(e.names, bd.entry.Qualified)
		if bd.node == "" {
			continue
		}
		nv := e.nodes[bd.node]
		if nv == nil {
			nv = &nodeValue{id: bd.entry.Node, attr: bd.node, tools: map[string]*toolFunc{}}
			e.nodes[bd.node] = nv
			e.predeclared[bd.node] = nv
		}
		nv.tools[bd.tool] = &toolFunc{r: r, entry: bd.entry, name: bd.node + "." + bd.tool}
	}
	return e
}

func (e *scriptEnv) shows(te node.ToolEntry) bool {
	return e.visible == nil || e.visible(te.Node, te.Tool)
}

func (e *scriptEnv) isPredeclared(name string) bool { return e.predeclared.Has(name) }

// lookup finds a visible tool by qualified or LLM-safe name, or by the
// name a script calls it (my_fs.read_file for node my-fs).
func (e *scriptEnv) lookup(name string) (*toolFunc, bool) {
	if te, ok := e.ts.Lookup(name); ok && e.shows(te) {
		if nv := e.nodes[identifier(te.Node)]; nv != nil && nv.id == te.Node {
			if t := nv.tools[identifier(te.Tool.Name)]; t != nil && t.entry.Qualified == te.Qualified {
				return t, true
			}
		}
		return &toolFunc{r: e.r, entry: te, name: te.Qualified}, true
	}
	if n, t, ok := strings.Cut(name, "."); ok {
		if nv := e.nodes[n]; nv != nil {
			if tf := nv.tools[t]; tf != nil {
				return tf, true
			}
		}
	}
	return nil, false
}

// notVisible is the error of a call of a tool the script may not call,
// which never says whether the tool exists.
func (e *scriptEnv) notVisible(name string) error {
	msg := fmt.Sprintf("tool %q is not visible to this script: no such tool, or the tool filter hides it (the tools a script may call are listed in run_script's description)", name)
	if s := suggest.Closest(name, e.names); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return fmt.Errorf("%s", msg)
}

// identifier is name as a Starlark identifier: every character outside
// [A-Za-z0-9_] read as '_', "" for a keyword or a name that starts with
// a digit.
func identifier(name string) string {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return ""
	}
	b := []byte(name)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	id := string(b)
	if keywords[id] {
		return ""
	}
	return id
}

// keywords are Starlark's keywords and the words it reserves.
var keywords = map[string]bool{
	"and": true, "break": true, "continue": true, "def": true, "elif": true, "else": true,
	"for": true, "if": true, "in": true, "lambda": true, "load": true, "not": true, "or": true,
	"pass": true, "return": true, "while": true,
	"as": true, "assert": true, "async": true, "await": true, "class": true, "del": true,
	"except": true, "finally": true, "from": true, "global": true, "import": true, "is": true,
	"nonlocal": true, "raise": true, "try": true, "with": true, "yield": true,
}

// nodeValue is a node in a script: its visible tools are its attributes.
type nodeValue struct {
	id, attr string
	tools    map[string]*toolFunc
}

var (
	_ starlark.HasAttrs = (*nodeValue)(nil)
	_ starlark.Callable = (*toolFunc)(nil)
	_ starlark.HasAttrs = (*toolError)(nil)
)

func (n *nodeValue) String() string        { return "<node " + n.id + ">" }
func (n *nodeValue) Type() string          { return "node" }
func (n *nodeValue) Freeze()               {}
func (n *nodeValue) Truth() starlark.Bool  { return true }
func (n *nodeValue) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: node") }

func (n *nodeValue) Attr(name string) (starlark.Value, error) {
	if t, ok := n.tools[name]; ok {
		return t, nil
	}
	msg := fmt.Sprintf("%s has no tool %q visible to this script", n.attr, name)
	if s := suggest.Closest(name, n.AttrNames()); s != "" {
		msg += fmt.Sprintf("; did you mean %s.%s?", n.attr, s)
	}
	return nil, starlark.NoSuchAttrError(msg)
}

func (n *nodeValue) AttrNames() []string {
	names := make([]string, 0, len(n.tools))
	for k := range n.tools {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// toolFunc is a tool in a script: calling it calls the tool.
type toolFunc struct {
	r     *run
	entry node.ToolEntry
	name  string // as the script calls it: fs.read_text_file
}

func (t *toolFunc) String() string        { return "<tool " + t.entry.Qualified + ">" }
func (t *toolFunc) Type() string          { return "tool" }
func (t *toolFunc) Freeze()               {}
func (t *toolFunc) Truth() starlark.Bool  { return true }
func (t *toolFunc) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: tool") }
func (t *toolFunc) Name() string          { return t.name }

func (t *toolFunc) CallInternal(thread *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return t.r.callOne(thread, t, args, kwargs)
}

// toolError is a failed call: a value the script tests with is_error(r)
// or `if not r`, whose .error is the failure; any other use of it fails
// the script with that failure and where it happened.
type toolError struct {
	tool, msg string
	line      int32
}

func (e *toolError) String() string {
	return fmt.Sprintf("tool_error(%s: %s)", e.tool, e.msg)
}
func (e *toolError) Type() string          { return "tool_error" }
func (e *toolError) Freeze()               {}
func (e *toolError) Truth() starlark.Bool  { return false }
func (e *toolError) Hash() (uint32, error) { return 0, e.misuse() }
func (e *toolError) AttrNames() []string   { return []string{"error", "tool"} }

func (e *toolError) Attr(name string) (starlark.Value, error) {
	switch name {
	case "error":
		return starlark.String(e.msg), nil
	case "tool":
		return starlark.String(e.tool), nil
	}
	return nil, e.misuse()
}

func (e *toolError) Binary(syntax.Token, starlark.Value, starlark.Side) (starlark.Value, error) {
	return nil, e.misuse()
}

func (e *toolError) Get(starlark.Value) (starlark.Value, bool, error) { return nil, false, e.misuse() }

func (e *toolError) misuse() error {
	return fmt.Errorf("the call of %s at line %d failed: %s — test a result with is_error(r) before using it", e.tool, e.line, e.msg)
}

// toolBuiltins adds tool(), parallel(), is_error() and describe() to d.
func (r *run) toolBuiltins(d starlark.StringDict) {
	d["tool"] = starlark.NewBuiltin("tool", func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) == 0 {
			return nil, fmt.Errorf(`tool needs the tool's name first: tool("node.tool", arg=value)`)
		}
		t, err := r.toolArg(args[0])
		if err != nil {
			return nil, err
		}
		return r.callOne(thread, t, args[1:], kwargs)
	})
	d["parallel"] = starlark.NewBuiltin("parallel", r.parallel)
	d["is_error"] = starlark.NewBuiltin("is_error", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x starlark.Value
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &x); err != nil {
			return nil, err
		}
		_, bad := x.(*toolError)
		return starlark.Bool(bad), nil
	})
	d["describe"] = starlark.NewBuiltin("describe", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x starlark.Value
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &x); err != nil {
			return nil, err
		}
		t, err := r.toolArg(x)
		if err != nil {
			return nil, err
		}
		return starlark.String(describe(t.name, t.entry.Tool)), nil
	})
}

// toolArg is the tool x names: a tool value, or a name.
func (r *run) toolArg(x starlark.Value) (*toolFunc, error) {
	switch x := x.(type) {
	case *toolFunc:
		return x, nil
	case starlark.String:
		t, ok := r.env.lookup(string(x))
		if !ok {
			return nil, r.env.notVisible(string(x))
		}
		return t, nil
	}
	return nil, fmt.Errorf(`a tool is named by a string ("fs.read_text_file") or given as fs.read_text_file, not by a %s`, x.Type())
}

// callOne calls t once, from the script's thread.
func (r *run) callOne(thread *starlark.Thread, t *toolFunc, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	argv, err := r.arguments(t, args, kwargs)
	if err != nil {
		return nil, err
	}
	if err := r.reserve(1); err != nil {
		return nil, err
	}
	pos := thread.CallFrame(1).Pos
	res, cerr := r.invoke(t, argv, pos.Line, pos.Col)
	return r.toolValue(t, res, cerr, pos.Line)
}

// reserve counts n more calls, or fails naming the calls limit.
func (r *run) reserve(n int) error {
	if r.calls+n > r.limits.Calls {
		e := r.limitError(LimitCalls, fmt.Sprintf("more than %d tool calls (limit calls=%d)", r.limits.Calls, r.limits.Calls))
		r.stopWith(e)
		return e
	}
	r.calls += n
	return nil
}

// arguments are a call's arguments as a JSON object: keyword arguments,
// over a dict given first; one other positional argument is the tool's
// only (or only required) parameter.
func (r *run) arguments(t *toolFunc, args starlark.Tuple, kwargs []starlark.Tuple) (json.RawMessage, error) {
	obj := map[string]any{}
	if len(args) > 1 {
		return nil, fmt.Errorf("%s takes keyword arguments: %s", t.name, describeCall(t.name, t.entry.Tool))
	}
	if len(args) == 1 {
		if d, ok := args[0].(*starlark.Dict); ok {
			v, err := r.toJSON(d, "the arguments of "+t.name)
			if err != nil {
				return nil, err
			}
			obj = v.(map[string]any)
		} else {
			p := soleParam(t.entry.Tool)
			if p == "" {
				return nil, fmt.Errorf("%s takes keyword arguments: %s", t.name, describeCall(t.name, t.entry.Tool))
			}
			v, err := r.toJSON(args[0], "the argument "+p+" of "+t.name)
			if err != nil {
				return nil, err
			}
			obj[p] = v
		}
	}
	for _, kv := range kwargs {
		k := string(kv[0].(starlark.String))
		v, err := r.toJSON(kv[1], "the argument "+k+" of "+t.name)
		if err != nil {
			return nil, err
		}
		obj[k] = v
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("the arguments of %s: %w", t.name, err)
	}
	return b, r.charge(int64(len(b)), "the arguments of "+t.name)
}

// invoke makes one call through the caller, as the script's run; it may
// run on any goroutine.
func (r *run) invoke(t *toolFunc, args json.RawMessage, line, col int32) (*mcp.CallToolResult, error) {
	caller := node.Caller{Kind: CallerKind, Via: r.sender.Via, Run: r.id, Step: fmt.Sprintf("%d:%d", line, col)}
	if r.sender.Kind != "" {
		caller.Name = r.sender.String()
	}
	ctx := node.WithCaller(r.ctx, caller)
	if r.opts.Observe == nil {
		return r.opts.Tools.CallTool(ctx, t.entry.Qualified, args, nil)
	}
	start := time.Now()
	res, err := r.opts.Tools.CallTool(ctx, t.entry.Qualified, args, nil)
	step := struct {
		Step   string  `json:"step"`
		State  string  `json:"state"`
		Line   int32   `json:"line"`
		Millis float64 `json:"ms"`
		Error  string  `json:"error,omitempty"`
	}{Step: t.entry.Qualified, State: "done", Line: line, Millis: float64(time.Since(start).Microseconds()) / 1000}
	if err != nil || res != nil && res.IsError {
		step.State = "failed"
		if err != nil {
			step.Error = err.Error()
		}
	}
	data, _ := json.Marshal(step)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opts.Observe(node.CallEvent{Kind: node.EventStep, Step: "script", Data: data})
	return res, err
}

// toolValue is what a call returns to the script: an error value for a
// call that failed, the structured content of a tool that declares an
// output schema, else its text.
func (r *run) toolValue(t *toolFunc, res *mcp.CallToolResult, err error, line int32) (starlark.Value, error) {
	if err != nil {
		r.failed++
		return &toolError{tool: t.name, msg: err.Error(), line: line}, nil
	}
	if res == nil {
		return starlark.None, nil
	}
	if res.IsError {
		r.failed++
		msg := strings.TrimPrefix(node.ResultText(res, 4<<10), "Error: ")
		return &toolError{tool: t.name, msg: msg, line: line}, nil
	}
	if res.StructuredContent != nil && (t.entry.Tool.OutputSchema != nil || len(res.Content) == 0) {
		return r.fromGo(res.StructuredContent)
	}
	var text string
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if text == "" && len(res.Content) > 0 {
		left := r.limits.Bytes - r.used
		text = node.ResultText(res, int(min(left, 1<<30)))
	}
	if err := r.charge(int64(len(text))+16, "the result of "+t.name); err != nil {
		return nil, err
	}
	return starlark.String(text), nil
}

// parallel(calls) makes independent calls at once, at most
// Limits.Parallel at a time, and returns their results in order. Each
// call is (tool, {args}) — the tool a value or a name — or a bare tool.
// Only the calls run at once: Starlark code never does, so no script
// value is shared between goroutines.
func (r *run) parallel(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var calls starlark.Iterable
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &calls); err != nil {
		return nil, fmt.Errorf(`%w: give a list of calls, e.g. parallel([(fs.read_text_file, {"path": "a"}), (fs.read_text_file, {"path": "b"})])`, err)
	}
	n, err := r.bound(calls, "parallel()")
	if err != nil {
		return nil, err
	}
	type job struct {
		t    *toolFunc
		args json.RawMessage
		res  *mcp.CallToolResult
		err  error
	}
	jobs := make([]job, 0, n)
	iter := calls.Iterate()
	var item starlark.Value
	for iter.Next(&item) {
		var tv, av starlark.Value
		switch it := item.(type) {
		case starlark.Tuple:
			if len(it) == 0 || len(it) > 2 {
				iter.Done()
				return nil, fmt.Errorf(`parallel: call %d is a tuple of %d: give (tool, {"arg": value})`, len(jobs)+1, len(it))
			}
			tv = it[0]
			if len(it) == 2 {
				av = it[1]
			}
		case *starlark.List:
			if it.Len() == 0 || it.Len() > 2 {
				iter.Done()
				return nil, fmt.Errorf(`parallel: call %d is a list of %d: give (tool, {"arg": value})`, len(jobs)+1, it.Len())
			}
			tv = it.Index(0)
			if it.Len() == 2 {
				av = it.Index(1)
			}
		default:
			tv = item
		}
		t, err := r.toolArg(tv)
		if err != nil {
			iter.Done()
			return nil, fmt.Errorf("parallel: call %d: %w", len(jobs)+1, err)
		}
		var posArgs starlark.Tuple
		if av != nil && av != starlark.None {
			if _, ok := av.(*starlark.Dict); !ok {
				iter.Done()
				return nil, fmt.Errorf(`parallel: call %d: the arguments of %s must be a dict ({"path": "a"}), not a %s`, len(jobs)+1, t.name, av.Type())
			}
			posArgs = starlark.Tuple{av}
		}
		argv, err := r.arguments(t, posArgs, nil)
		if err != nil {
			iter.Done()
			return nil, err
		}
		jobs = append(jobs, job{t: t, args: argv})
	}
	iter.Done()
	if err := r.reserve(len(jobs)); err != nil {
		return nil, err
	}
	pos := thread.CallFrame(1).Pos
	sem := make(chan struct{}, r.limits.Parallel)
	var wg sync.WaitGroup
	for i := range jobs {
		sem <- struct{}{}
		wg.Add(1)
		go func(j *job) {
			defer func() { <-sem; wg.Done() }()
			j.res, j.err = r.invoke(j.t, j.args, pos.Line, pos.Col)
		}(&jobs[i])
	}
	wg.Wait()
	out := make([]starlark.Value, len(jobs))
	for i := range jobs {
		v, err := r.toolValue(jobs[i].t, jobs[i].res, jobs[i].err, pos.Line)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return starlark.NewList(out), nil
}
