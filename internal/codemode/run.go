package codemode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/nerve-dev/nerve/internal/telemetry"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Default limits of a script run (docs/code-mode.md#limits).
const (
	DefaultSteps    = 10_000_000
	DefaultTime     = 60 * time.Second
	DefaultCalls    = 1000
	DefaultBytes    = 64 << 20
	DefaultParallel = 8
)

// The names of the limits, as errors and Error.Limit give them.
const (
	LimitSteps = "steps"
	LimitTime  = "time"
	LimitCalls = "calls"
	LimitBytes = "bytes"
)

// CallerKind is the node.Caller kind of a script's tool calls: the call
// log shows them as script:CLIENT, with the run's id in caller.run and the
// call's line:column in caller.step.
const CallerKind = "script"

// Limits bound one run; a zero field takes its default.
type Limits struct {
	// Steps bounds the interpreter's steps, and the elements a builtin
	// walks (list(range(n)) costs n steps).
	Steps uint64
	// Time bounds the run's wall time, tool calls included.
	Time time.Duration
	// Calls bounds the tool calls, parallel ones included.
	Calls int
	// Bytes bounds the bytes of the values the script builds by copying
	// (+, *, %, slices, join, str, list(), …), of the tool results it
	// receives and of what it prints, counted as they are made: what a
	// script builds one element per step is bounded by Steps.
	Bytes int64
	// Parallel bounds the calls one parallel() makes at once.
	Parallel int
}

func (l Limits) withDefaults() Limits {
	if l.Steps == 0 {
		l.Steps = DefaultSteps
	}
	if l.Time <= 0 {
		l.Time = DefaultTime
	}
	if l.Calls <= 0 {
		l.Calls = DefaultCalls
	}
	if l.Bytes <= 0 {
		l.Bytes = DefaultBytes
	}
	if l.Parallel <= 0 {
		l.Parallel = DefaultParallel
	}
	return l
}

// Options say what a script may call and how far it may go.
type Options struct {
	// Tools makes every call (required): the session, or what stands for
	// it (an MCP server's backend). Its Toolset is read once per run.
	Tools node.ToolCaller
	// Visible reports whether the script may see and call node's tool t
	// (an MCP client's exposure filter, an llm node's tool list); nil
	// shows every tool.
	Visible func(nodeID string, t *mcp.Tool) bool
	// Limits bound the run.
	Limits Limits
	// Filename names the script in positions ("script" when empty).
	Filename string
	// Observe, if set, hears of each tool call as it ends, as a
	// node.EventStep with Step "script" (serialised: never two at once).
	Observe func(node.CallEvent)
	// Globals are values the script reads by name, given as data (a
	// graph step's inputs and earlier results): JSON-like Go values,
	// frozen, so a script can read them but not change them. A global
	// hides a node of the same name (tool("node.tool") still reaches it).
	// A name must be an identifier and not a builtin's.
	Globals map[string]any
	// Assume names nodes that Check takes as defined although none of
	// their tools is visible (nodes down now, whose tools cannot be
	// listed), so a script that uses them compiles.
	Assume []string
}

// Result is what a run produced; on a script error it holds what was
// printed and the calls made before the error.
type Result struct {
	// Run is the run's id: each call's caller.run in the call log.
	Run string
	// Value is the script's result as JSON data (map[string]any,
	// []any, string, json.Number, float64, bool or nil): its `result`
	// variable, else the value of its last line when that is an
	// expression, else nil.
	Value any
	// Printed is what print() wrote, cut at maxPrinted bytes.
	Printed string
	// Calls is the number of tool calls made; Failed how many of them
	// returned an error value.
	Calls, Failed int
}

// Error is a script that did not end well: a syntax error, a runtime
// error, a limit reached or a run cancelled.
type Error struct {
	// Msg says what went wrong (for a limit, which and its value).
	Msg string
	// Line and Column are where, in the script (0 when unknown).
	Line, Column int
	// Limit is the limit reached (LimitSteps, …), "" for other errors.
	Limit string
	// Backtrace is the Starlark call stack, for a runtime error.
	Backtrace string
	// filename is the script's name, for Error().
	filename string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.filename, e.Line, e.Column, e.Msg)
}

// errTimeLimit is the cause of a run's context when its time limit ends
// it, told apart from its caller's cancellation or deadline.
var errTimeLimit = errors.New("the script's time limit")

// ErrNoTools is the error of a Run without Options.Tools.
var ErrNoTools = errors.New("codemode: Options.Tools is nil")

// fileOptions are the dialect: Python's while, top-level if/for/while and
// reassignment of globals (what a model writes), sets; recursion stays off.
var fileOptions = &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true}

// Run runs the Starlark script src: each call of a visible tool goes
// through opts.Tools with ctx (which carries the call chain; its caller,
// if any, is recorded as the script's client). The result is always
// non-nil; err is an *Error when the script failed or was stopped, or
// ErrNoTools.
func Run(ctx context.Context, src string, opts *Options) (*Result, error) {
	if opts == nil || opts.Tools == nil {
		return &Result{}, ErrNoTools
	}
	ctx, span := telemetry.Script(ctx, opts.Filename) // the parent of the script's calls
	r := newRun(ctx, opts)
	defer r.end()
	span.Set(telemetry.AttrScriptRun.String(r.id))
	res, err := r.result(r.exec(src))
	span.End(err)
	return res, err
}

// Check compiles src against the tools opts makes visible without running
// it: a syntax error, load(), or a name that is neither a builtin nor a
// visible node comes back as an *Error at its line and column.
func Check(ctx context.Context, src string, opts *Options) error {
	if opts == nil || opts.Tools == nil {
		return ErrNoTools
	}
	r := newRun(ctx, opts)
	defer r.end()
	_, err := r.compile(src)
	return err
}

// run is one execution of a script. Its fields are used by the script's
// thread only, except mu's.
type run struct {
	ctx     context.Context
	cancel  context.CancelFunc
	opts    *Options
	limits  Limits
	file    string
	id      string
	sender  node.Caller
	thread  *starlark.Thread
	env     *scriptEnv
	used    int64 // bytes charged (Limits.Bytes)
	calls   int
	failed  int
	printed strings.Builder
	cut     int64 // printed bytes left out
	// stop is the limit that stopped the thread, once known.
	stop *Error

	// mu serialises Observe.
	mu sync.Mutex
}

func newRun(ctx context.Context, opts *Options) *run {
	r := &run{opts: opts, limits: opts.Limits.withDefaults(), file: opts.Filename}
	if r.file == "" {
		r.file = "script"
	}
	r.sender, _ = node.CallerFrom(ctx)
	r.id = newRunID()
	r.ctx, r.cancel = context.WithTimeoutCause(ctx, r.limits.Time, errTimeLimit)
	r.thread = &starlark.Thread{Name: r.id, Print: r.print}
	r.thread.SetMaxExecutionSteps(r.limits.Steps)
	r.env = newScriptEnv(r, opts.Tools.Toolset(r.ctx), opts.Visible)
	return r
}

func (r *run) end() { r.cancel() }

func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "script-" + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// compile parses, checks and compiles src (rewrite.go guards its
// operations).
func (r *run) compile(src string) (*starlark.Program, error) {
	if err := r.setGlobals(); err != nil {
		return nil, err
	}
	f, err := fileOptions.Parse(r.file, src, 0)
	if err != nil {
		return nil, r.syntaxError(err)
	}
	if err := guardFile(f); err != nil {
		return nil, r.syntaxError(err)
	}
	prog, err := starlark.FileProgram(f, r.env.isPredeclared)
	if err != nil {
		return nil, r.syntaxError(err)
	}
	return prog, nil
}

// setGlobals adds Options.Globals to what the script sees, frozen, and
// the names of Options.Assume.
func (r *run) setGlobals() error {
	names := make([]string, 0, len(r.opts.Globals))
	for name := range r.opts.Globals {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if identifier(name) != name || reserved[name] || starlark.Universe.Has(name) {
			return &Error{Msg: fmt.Sprintf("codemode: global %q is not an identifier free for a script's data", name), filename: r.file}
		}
		v, err := r.fromGo(r.opts.Globals[name])
		if err != nil {
			return &Error{Msg: fmt.Sprintf("the script's global %s: %v", name, err), filename: r.file}
		}
		v.Freeze()
		r.env.predeclared[name] = v
	}
	for _, name := range r.opts.Assume {
		if id := identifier(name); id != "" && !r.env.predeclared.Has(id) {
			r.env.predeclared[id] = starlark.None
		}
	}
	return nil
}

// exec runs src and returns its globals.
func (r *run) exec(src string) (starlark.StringDict, error) {
	prog, err := r.compile(src)
	if err != nil {
		return nil, err
	}
	// The wall-time limit and the caller's cancellation stop the thread
	// between two steps; builtins are bounded, tool calls see ctx.
	stopTimer := context.AfterFunc(r.ctx, func() { r.thread.Cancel("stopped") })
	defer stopTimer()
	r.thread.OnMaxSteps = func(t *starlark.Thread) {
		r.stopWith(r.limitError(LimitSteps, fmt.Sprintf("more than %d steps (limit steps=%d): a loop that never ends? (`while` loops need a way out)", r.limits.Steps, r.limits.Steps)))
		t.Cancel("too many steps")
	}
	globals, err := prog.Init(r.thread, r.env.predeclared)
	if err != nil {
		return globals, r.runtimeError(err)
	}
	return globals, nil
}

// stopWith records the limit that stops the thread, the first one only.
func (r *run) stopWith(e *Error) {
	if r.stop == nil {
		r.stop = e
	}
}

func (r *run) limitError(limit, msg string) *Error {
	return &Error{Msg: "script stopped: " + msg, Limit: limit, filename: r.file}
}

// result builds the run's Result from its globals.
func (r *run) result(globals starlark.StringDict, err error) (*Result, error) {
	res := &Result{Run: r.id, Calls: r.calls, Failed: r.failed, Printed: r.printedText()}
	if err != nil {
		return res, err
	}
	v, ok := globals["result"]
	if !ok {
		v = globals[lastName]
	}
	if v == nil || v == starlark.None {
		return res, nil
	}
	val, err := r.toJSON(v, "the script's result")
	if err != nil {
		return res, r.runtimeError(err)
	}
	res.Value = val
	return res, nil
}

// syntaxError turns a parse or resolve error into an *Error at its
// position, with a hint for what a Python writer tries first.
func (r *run) syntaxError(err error) error {
	e := &Error{Msg: err.Error(), filename: r.file}
	var pos syntax.Position
	var se syntax.Error
	var le resolve.ErrorList
	var ge *guardError
	switch {
	case errors.As(err, &se):
		e.Msg, pos = se.Msg, se.Pos
	case errors.As(err, &le) && len(le) > 0:
		msgs := make([]string, len(le))
		for i, x := range le {
			msgs[i] = x.Msg
			if i > 0 {
				msgs[i] = fmt.Sprintf("%d:%d: %s", x.Pos.Line, x.Pos.Col, x.Msg)
			}
		}
		e.Msg, pos = strings.Join(msgs, "; "), le[0].Pos
	case errors.As(err, &ge):
		e.Msg, pos = ge.msg, ge.pos
	}
	e.Line, e.Column = int(pos.Line), int(pos.Col)
	e.Msg = hint(e.Msg)
	return e
}

// runtimeError turns an evaluation error into an *Error at the innermost
// position of the script, naming the limit when one stopped it.
func (r *run) runtimeError(err error) error {
	e := &Error{Msg: err.Error(), filename: r.file}
	var le *Error
	if errors.As(err, &le) {
		*e = *le // a limit reached inside a builtin, or a tool's misuse
	}
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		e.Backtrace = ee.Backtrace()
		for i := len(ee.CallStack) - 1; i >= 0; i-- {
			if p := ee.CallStack[i].Pos; p.Line > 0 && p.Filename() == r.file {
				e.Line, e.Column = int(p.Line), int(p.Col)
				break
			}
		}
		if le == nil {
			e.Msg = ee.Msg
		}
	}
	if strings.HasPrefix(e.Msg, "Starlark computation cancelled") {
		switch {
		case r.stop != nil:
			e.Msg, e.Limit = r.stop.Msg, r.stop.Limit
		case context.Cause(r.ctx) == errTimeLimit:
			e.Msg, e.Limit = fmt.Sprintf("script stopped: ran longer than %s (limit time=%s)", r.limits.Time, r.limits.Time), LimitTime
		default:
			e.Msg = "script cancelled: " + context.Cause(r.ctx).Error()
		}
	}
	return e
}
