package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/backoff"
	"github.com/nerve-dev/nerve/internal/graphlang"
	"github.com/nerve-dev/nerve/internal/telemetry"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Caller calls a session tool by qualified name; node.ToolCaller is one.
type Caller interface {
	CallTool(ctx context.Context, name string, args json.RawMessage, observe func(node.CallEvent)) (*mcp.CallToolResult, error)
}

// Asker puts an ask step's question to the person; with a page (url,
// else ""), the question is to open it and say when done.
type Asker func(ctx context.Context, question, url string) (*mcp.ElicitResult, error)

// StepRecord is one step of a run, as recorded.
type StepRecord struct {
	ID       string                `json:"id"`
	State    string                `json:"state"`
	Args     json.RawMessage       `json:"args,omitempty"`
	Result   *graphlang.StepResult `json:"result,omitempty"`
	Error    string                `json:"error,omitempty"`
	Attempts int                   `json:"attempts,omitempty"`
	Started  time.Time             `json:"started,omitzero"`
	Millis   float64               `json:"ms"`
	// Cut says the run record keeps the result or arguments cut (at
	// 64 KiB): a resume never reuses them.
	Cut bool `json:"cut,omitempty"`
}

// done reports whether a resumed run can reuse the step as it is: it
// finished or was skipped, and its result is whole.
func (r *StepRecord) done() bool {
	return r != nil && (r.State == api.StepFinished || r.State == api.StepSkipped) && !r.cut()
}

// cut reports whether the record's result was cut — Cut, or the mark clip
// leaves in records written before Cut existed.
func (r *StepRecord) cut() bool {
	return r.Cut || r.Result != nil && len(r.Result.Text) > maxRecordText && strings.HasSuffix(r.Result.Text, "… (cut)")
}

// RunOptions are what a run needs besides the graph and its inputs.
type RunOptions struct {
	Caller Caller
	// Ask answers ask steps; nil declines them.
	Ask Asker
	// Emit, if set, is told about every step event. It must not block.
	Emit func(api.StepEvent)
	// Record, if set, gets a copy of a step's record whenever it changes.
	Record func(StepRecord)
	// Commit, if set, makes a step done (finished or skipped) durable. It
	// is called before Record is told, before any step that depends on it
	// starts, and before the run ends; an error fails the run at that
	// step. sync says a step depends on it: Commit returns only once the
	// step is on disk. Otherwise it may be synced later, by the time the
	// run's record says it ended.
	Commit func(rec StepRecord, sync bool) error
	// Tool, if set, is asked about a step's tool before each call: the
	// arguments it runs as shell code (its command, whose references
	// become variables, and argv), or why it cannot be called (the step
	// fails).
	Tool func(ctx context.Context, name string) (node.ShellParams, error)
	// Prior holds the records of an interrupted run: steps finished there
	// are not run again (nerve graph resume).
	Prior map[string]*StepRecord
	// Graph and RunID name the run's calls in the call log (node.Caller).
	Graph, RunID string
}

// RunError is a run that failed because of one step.
type RunError struct {
	Step string
	Err  error
}

func (e *RunError) Error() string { return fmt.Sprintf("step %s: %v", e.Step, e.Err) }
func (e *RunError) Unwrap() error { return e.Err }

// stepFailure is a step that ran and failed, with the result if there was one.
type stepFailure struct {
	msg string
	res *graphlang.StepResult
}

func (f *stepFailure) Error() string { return f.msg }

// Run runs the graph on inputs (already checked against the schema) and
// returns the value of its output. A step that fails under on_error: fail
// cancels the other steps and fails the run with a *RunError.
func Run(ctx context.Context, d *graphlang.Def, inputs map[string]any, o RunOptions) (out any, err error) {
	ctx, span := telemetry.GraphRun(ctx, o.Graph, o.RunID) // the parent of its steps' spans
	defer func() { span.End(err) }()
	inputs = withDefaults(d, inputs)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	r := &run{d: d, o: o, inputs: inputs, results: map[string]*graphlang.StepResult{}, done: map[string]chan struct{}{}, dependedOn: map[string]bool{}}
	for _, s := range d.Steps {
		r.done[s.ID] = make(chan struct{})
		for _, dep := range s.Deps {
			r.dependedOn[dep] = true
		}
	}
	maxPar := d.MaxParallel
	if maxPar < 1 {
		maxPar = graphlang.DefaultMaxParallel
	}
	sem := make(chan struct{}, maxPar)
	var wg sync.WaitGroup
	for _, s := range d.Steps {
		wg.Go(func() {
			defer close(r.done[s.ID])
			for _, dep := range s.Deps {
				select {
				case <-r.done[dep]:
				case <-ctx.Done():
					return
				}
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			// A failed dependency closes its channel after it cancelled
			// the run, and select picks at random among ready cases: look
			// again before running.
			if ctx.Err() != nil {
				<-sem
				return
			}
			sctx, span := telemetry.GraphStep(ctx, s.ID) // the parent of the step's calls
			err := r.step(sctx, s)
			span.End(err)
			<-sem
			if err != nil {
				cancel(&RunError{Step: s.ID, Err: err})
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		var re *RunError
		if errors.As(err, &re) {
			return nil, re
		}
		return nil, err
	}
	return r.output()
}

// withDefaults fills the inputs not given with their defaults.
func withDefaults(d *graphlang.Def, in map[string]any) map[string]any {
	out := make(map[string]any, len(d.Inputs))
	for k, v := range in {
		out[k] = v
	}
	for _, i := range d.Inputs {
		if _, ok := out[i.Name]; !ok && i.HasDefault {
			out[i.Name] = i.Default
		}
	}
	return out
}

type run struct {
	d      *graphlang.Def
	o      RunOptions
	inputs map[string]any
	done   map[string]chan struct{}
	// dependedOn are the steps another waits for.
	dependedOn map[string]bool

	// mu guards results: nil for a step skipped by when.
	mu      sync.Mutex
	results map[string]*graphlang.StepResult
}

func (r *run) result(id string) *graphlang.StepResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.results[id]
}

func (r *run) scope() *graphlang.Scope { return &graphlang.Scope{Inputs: r.inputs, Results: r.result} }

func (r *run) emit(ev api.StepEvent) {
	if r.o.Emit != nil {
		r.o.Emit(ev)
	}
}

func (r *run) record(rec StepRecord) {
	if r.o.Record != nil {
		r.o.Record(rec)
	}
}

// commit makes a step done durable (RunOptions.Commit); synced at once
// when a step depends on it.
func (r *run) commit(rec StepRecord) error {
	if r.o.Commit == nil {
		return nil
	}
	return r.o.Commit(rec, r.dependedOn[rec.ID])
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// output is the value of the graph's output, or the text of its last step
// that has a result.
func (r *run) output() (any, error) {
	if r.d.Output != nil {
		return r.d.Output.Eval(r.scope())
	}
	for i := len(r.d.Steps) - 1; i >= 0; i-- {
		if res := r.result(r.d.Steps[i].ID); res != nil {
			return res.Text, nil
		}
	}
	return "", nil
}

// step runs one step to its end; an error fails the run.
func (r *run) step(ctx context.Context, s *graphlang.Step) error {
	if prior := r.o.Prior[s.ID]; prior.done() {
		if err := r.commit(*prior); err != nil {
			return err
		}
		r.mu.Lock()
		r.results[s.ID] = prior.Result
		r.mu.Unlock()
		r.record(*prior)
		r.emit(api.StepEvent{Step: s.ID, State: api.StepSkipped, Reason: "resumed"})
		return nil
	}
	start := time.Now()
	rec := StepRecord{ID: s.ID, State: api.StepStarted, Started: start}
	sc := r.scope()
	if s.When != nil {
		ok, err := s.When.Eval(sc)
		if err != nil {
			return r.finish(ctx, s, &rec, start, nil, err)
		}
		if !ok {
			rec.State = api.StepSkipped
			rec.Error = "when was false"
			if err := r.commit(rec); err != nil {
				return err
			}
			r.record(rec)
			r.emit(api.StepEvent{Step: s.ID, State: api.StepSkipped, Reason: "when"})
			return nil
		}
	}
	r.record(rec)
	r.emit(api.StepEvent{Step: s.ID, State: api.StepStarted})
	var res *graphlang.StepResult
	var err error
	if s.Foreach != nil {
		res, err = r.foreach(ctx, s, sc, &rec)
	} else {
		res, err = r.attempts(ctx, s, sc, &rec)
	}
	return r.finish(ctx, s, &rec, start, res, err)
}

// finish applies the step's on_error policy and records its end.
func (r *run) finish(ctx context.Context, s *graphlang.Step, rec *StepRecord, start time.Time, res *graphlang.StepResult, err error) error {
	rec.Millis = ms(time.Since(start))
	if err != nil && ctx.Err() != nil {
		// The run was cancelled (another step failed, or the caller
		// left): this step did not fail on its own.
		rec.State, rec.Error = api.StepCancelled, "the run was cancelled"
		r.record(*rec)
		return nil
	}
	if err != nil {
		rec.Error = err.Error()
		switch s.OnError {
		case graphlang.OnErrorSkip:
			res = &graphlang.StepResult{Text: graphlang.Text(s.Default), Structured: s.Default}
			rec.State, rec.Result = api.StepSkipped, res
			if err := r.commit(*rec); err != nil {
				return err
			}
			r.setResult(s.ID, res)
			r.record(*rec)
			r.emit(api.StepEvent{Step: s.ID, State: api.StepSkipped, Reason: "on_error", Error: rec.Error, Millis: rec.Millis})
			return nil
		case graphlang.OnErrorContinue:
			if res == nil {
				res = &graphlang.StepResult{Text: err.Error(), IsError: true}
			}
			res.IsError = true
			rec.State, rec.Result = api.StepFailed, res
			r.setResult(s.ID, res)
			r.record(*rec)
			r.emit(api.StepEvent{Step: s.ID, State: api.StepFailed, Error: rec.Error, Millis: rec.Millis, Reason: "continue"})
			return nil
		}
		rec.State, rec.Result = api.StepFailed, res
		r.record(*rec)
		r.emit(api.StepEvent{Step: s.ID, State: api.StepFailed, Error: rec.Error, Millis: rec.Millis})
		return err
	}
	rec.State, rec.Result = api.StepFinished, res
	if err := r.commit(*rec); err != nil {
		return err
	}
	r.setResult(s.ID, res)
	r.record(*rec)
	r.emit(api.StepEvent{Step: s.ID, State: api.StepFinished, Millis: rec.Millis})
	return nil
}

func (r *run) setResult(id string, res *graphlang.StepResult) {
	r.mu.Lock()
	r.results[id] = res
	r.mu.Unlock()
}

func (r *run) foreach(ctx context.Context, s *graphlang.Step, sc *graphlang.Scope, rec *StepRecord) (*graphlang.StepResult, error) {
	v, err := s.Foreach.Eval(sc)
	if err != nil {
		return nil, err
	}
	items, ok := v.([]any)
	if !ok {
		if str, isStr := v.(string); isStr {
			// A text result with one item per line is a list too.
			for _, line := range strings.Split(strings.TrimRight(str, "\n"), "\n") {
				if line != "" {
					items = append(items, line)
				}
			}
		} else if v != nil {
			return nil, fmt.Errorf("foreach needs a list, got %s", graphlang.TypeName(v))
		}
	}
	par := s.MaxParallel
	if par < 1 {
		par = r.d.MaxParallel
	}
	results := make([]*graphlang.StepResult, len(items))
	errs := make([]error, len(items))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, item := range items {
		isc := *sc
		isc.Item, isc.HasItem = item, true
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			var irec StepRecord
			results[i], errs[i] = r.attempts(ctx, s, &isc, &irec)
			if errs[i] != nil && s.OnError != graphlang.OnErrorContinue {
				cancel()
			}
		})
	}
	wg.Wait()
	out := &graphlang.StepResult{Texts: make([]any, 0, len(items))}
	texts := make([]string, 0, len(items))
	list := make([]any, 0, len(items))
	rec.Args, _ = json.Marshal(map[string]any{"foreach": items})
	// keep adds an item's result: its text (one trailing newline trimmed,
	// as $(…) does) and its structured value, or its text.
	keep := func(res *graphlang.StepResult) {
		t := strings.TrimSuffix(res.Text, "\n")
		texts = append(texts, t)
		out.Texts = append(out.Texts, t)
		if res.Structured != nil {
			list = append(list, res.Structured)
		} else {
			list = append(list, res.Text)
		}
	}
	if s.OnError == graphlang.OnErrorContinue && ctx.Err() == nil {
		// Every item ran to its end: keep each one's result, failed or
		// not, in item order; the step fails if any item did.
		var failed []string
		for i, res := range results {
			if errs[i] != nil {
				failed = append(failed, fmt.Sprintf("item %d (%s): %v", i, graphlang.FirstLine(graphlang.Text(items[i])), errs[i]))
				if res == nil {
					res = &graphlang.StepResult{Text: errs[i].Error(), IsError: true}
				}
			}
			keep(res)
		}
		out.Text, out.Structured = strings.Join(texts, "\n"), list
		if len(failed) > 0 {
			out.IsError = true
			return out, &stepFailure{msg: fmt.Sprintf("%d of %d items failed: %s", len(failed), len(items), strings.Join(failed, "; ")), res: out}
		}
		return out, nil
	}
	for i, res := range results {
		if errs[i] != nil && !errors.Is(errs[i], context.Canceled) {
			return nil, fmt.Errorf("item %d (%s): %w", i, graphlang.Text(items[i]), errs[i])
		}
		if res == nil {
			continue
		}
		keep(res)
	}
	for _, e := range errs {
		if e != nil {
			return nil, e // the parent was cancelled
		}
	}
	out.Text = strings.Join(texts, "\n")
	out.Structured = list
	return out, nil
}

// attempts calls the step's tool, retrying as its retry policy says.
func (r *run) attempts(ctx context.Context, s *graphlang.Step, sc *graphlang.Scope, rec *StepRecord) (*graphlang.StepResult, error) {
	var args json.RawMessage
	if s.Ask == nil && s.Script == "" {
		var sp node.ShellParams
		if r.o.Tool != nil {
			var err error
			if sp, err = r.o.Tool(ctx, s.Call); err != nil {
				return nil, err
			}
		}
		v, err := s.Args.EvalArgs(sc, sp, s.UnsafeShell)
		if err != nil {
			return nil, err
		}
		if v == nil {
			v = map[string]any{}
		}
		if args, err = marshalPlain(v); err != nil {
			return nil, fmt.Errorf("arguments: %w", err)
		}
		rec.Args = args
	}
	// The step's backoff doubles after each try, uncapped: the graph's
	// author chose both it and the number of tries.
	wait := backoff.Backoff{Base: s.Retry.Backoff}
	var res *graphlang.StepResult
	var err error
	for try := 1; ; try++ {
		rec.Attempts = try
		res, err = r.once(ctx, s, sc, args)
		if err == nil || try >= s.Retry.Attempts || ctx.Err() != nil || s.Ask != nil {
			return res, err
		}
		r.emit(api.StepEvent{Step: s.ID, State: api.StepRetried, Attempt: try + 1, Error: err.Error()})
		if err := wait.Wait(ctx, try-1); err != nil {
			return res, err
		}
	}
}

// errNoOne is an ask step with no one to put its question to: never
// "the person declined" when no person was asked.
var errNoOne error = noOneError{}

type noOneError struct{}

func (noOneError) Error() string {
	return "no one is attached to answer: run it from the Commander or a client that supports elicitation"
}
func (noOneError) Unwrap() error { return node.ErrNoOneToAsk }

type timeoutError struct{ d time.Duration }

func (e timeoutError) Error() string {
	return fmt.Sprintf("timed out after %s (the step's timeout)", e.d)
}

func isTimeout(err error) bool {
	var t timeoutError
	return errors.As(err, &t)
}

// once is one attempt of a step.
func (r *run) once(ctx context.Context, s *graphlang.Step, sc *graphlang.Scope, args json.RawMessage) (*graphlang.StepResult, error) {
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.Timeout, timeoutError{s.Timeout})
		defer cancel()
	}
	if s.Ask != nil {
		return r.ask(ctx, s, sc)
	}
	ctx = node.WithCaller(ctx, node.Caller{Kind: node.CallerGraph, Name: r.o.Graph, Run: r.o.RunID, Step: s.ID})
	if s.Script != "" {
		return r.script(ctx, s, sc)
	}
	res, err := r.o.Caller.CallTool(ctx, s.Call, args, nil)
	if cause := context.Cause(ctx); cause != nil && isTimeout(cause) && (err != nil || res == nil) {
		return nil, cause
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	out := resultOf(res)
	if out.IsError {
		return out, &stepFailure{msg: "the tool reported an error: " + graphlang.FirstLine(out.Text), res: out}
	}
	return out, nil
}

func (r *run) ask(ctx context.Context, s *graphlang.Step, sc *graphlang.Scope) (*graphlang.StepResult, error) {
	q, err := s.Ask.Eval(sc)
	if err != nil {
		return nil, err
	}
	if r.o.Ask == nil {
		return nil, errNoOne
	}
	// Say where the question went: a run from `nerve call` waited
	// silently for a Commander open elsewhere (issue 27).
	ctx = node.WithAsked(ctx, func(who string) {
		r.emit(api.StepEvent{Step: s.ID, State: api.StepAsked, Reason: who})
	})
	page := ""
	if s.URL != nil {
		v, err := s.URL.Eval(sc)
		if err != nil {
			return nil, err
		}
		if page, err = pageURL(graphlang.Text(v)); err != nil {
			return nil, err
		}
	}
	ans, err := r.o.Ask(ctx, graphlang.Text(q), page)
	if errors.Is(err, node.ErrNoOneToAsk) || err == nil && ans != nil && ans.Meta[node.MetaUnanswered] == true {
		return nil, errNoOne
	}
	if err != nil {
		return nil, fmt.Errorf("asking the person: %w", err)
	}
	if ans == nil || ans.Action != "accept" {
		action := "declined"
		if ans != nil && ans.Action == "cancel" {
			action = "cancelled"
		}
		return nil, fmt.Errorf("the person %s: %s", action, graphlang.Text(q))
	}
	res := &graphlang.StepResult{Text: "accepted"}
	if len(ans.Content) > 0 {
		res.Structured = graphlang.Normalize(map[string]any(ans.Content))
		if a, ok := ans.Content["answer"]; ok {
			res.Text = graphlang.Text(a)
		}
	}
	return res, nil
}

// resultOf is what later steps see of a tool's result: its text blocks
// joined by newlines, and its structured content — or, when it has none,
// its text read as JSON if it is a JSON object or list.
func resultOf(res *mcp.CallToolResult) *graphlang.StepResult {
	out := &graphlang.StepResult{IsError: res.IsError}
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	out.Text = strings.Join(texts, "\n")
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			var v any
			if json.Unmarshal(b, &v) == nil {
				out.Structured = v
			}
		}
	} else if t := bytes.TrimSpace([]byte(out.Text)); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		var v any
		if json.Unmarshal(t, &v) == nil {
			out.Structured = v
		}
	}
	return out
}

// marshalPlain is json.Marshal without HTML escaping: records and `nerve
// graph show` keep `>` as `>`, not `\u003e`.
func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
