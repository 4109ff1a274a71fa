// Package telemetry is nerve's OpenTelemetry tracing (issue 31): one span
// per hop a call takes through nerve — the command line, the daemon's local
// API, the MCP endpoint, the session, an mcp node, a graph run and its
// steps, a code-mode script — and the W3C trace context carried between
// them: as HTTP headers (traceparent, tracestate), in an MCP request's
// params._meta (SEP-414), and in a process's TRACEPARENT variable.
//
// It is off until Install is given a tracer provider (the export
// subpackage makes one from the standard OTEL_* variables). Off, every
// helper returns its context as it was and a zero Span after one atomic
// load: no allocation, no global no-op tracer (which allocates a span and
// a context per call). Spans follow OpenTelemetry's semantic conventions
// for MCP and generative AI where they name one (docs/observability.md).
//
// It imports only pkg/api of nerve's (for the errors it names); any
// package above that may import it.
package telemetry

import (
	"context"
	"errors"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/nerve-dev/nerve/pkg/api"
)

// instrumentation is the name of nerve's tracer (its instrumentation
// scope).
const instrumentation = "github.com/nerve-dev/nerve"

// tracer is nerve's tracer once Install was called; nil while off.
var tracer atomic.Pointer[trace.Tracer]

// On reports whether tracing is on: a tracer provider was installed.
func On() bool { return tracer.Load() != nil }

// Install turns tracing on with tp; nil turns it off again (a test's
// cleanup). Spans started before keep the provider they had.
func Install(tp trace.TracerProvider) {
	if tp == nil {
		tracer.Store(nil)
		return
	}
	t := tp.Tracer(instrumentation)
	tracer.Store(&t)
}

// Span is a span nerve started, or nothing (the zero value) when tracing
// is off. Its methods do nothing on the zero value.
type Span struct{ s trace.Span }

// start starts a span under ctx's span, or returns ctx and no span when
// tracing is off.
func start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, Span) {
	t := tracer.Load()
	if t == nil {
		return ctx, Span{}
	}
	ctx, s := (*t).Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return ctx, Span{s}
}

// Set adds attributes to the span.
func (s Span) Set(attrs ...attribute.KeyValue) {
	if s.s != nil {
		s.s.SetAttributes(attrs...)
	}
}

// Usage sets the tokens a model's answer took (gen_ai.usage.*).
func (s Span) Usage(input, output int) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Int("gen_ai.usage.input_tokens", input), attribute.Int("gen_ai.usage.output_tokens", output))
	}
}

// End ends the span; a non-nil err marks it failed (status ERROR, the
// error's class as error.type, the error recorded as an event).
func (s Span) End(err error) {
	if s.s == nil {
		return
	}
	if err != nil {
		fail(s.s, ErrorType(err), err)
	}
	s.s.End()
}

// EndCall ends the span of a tool call: a result with isError is the
// outcome tool_error (semantic conventions' error.type for a
// CallToolResult with isError), err the outcome error.
func (s Span) EndCall(isError bool, err error) {
	if s.s == nil {
		return
	}
	switch {
	case err != nil:
		s.s.SetAttributes(AttrOutcome.String(OutcomeError))
		fail(s.s, ErrorType(err), err)
	case isError:
		s.s.SetAttributes(AttrOutcome.String(OutcomeToolError), attribute.String("error.type", "tool_error"))
		s.s.SetStatus(codes.Error, "the tool reported an error")
	default:
		s.s.SetAttributes(AttrOutcome.String(OutcomeOK))
	}
	s.s.End()
}

func fail(s trace.Span, typ string, err error) {
	s.SetAttributes(attribute.String("error.type", typ))
	s.SetStatus(codes.Error, err.Error())
	s.RecordError(err)
}

// Outcomes of a call (AttrOutcome; the metrics' outcome label).
const (
	OutcomeOK        = "ok"
	OutcomeToolError = "tool_error"
	OutcomeError     = "error"
)

// Outcome is the outcome of a call that returned isError and err.
func Outcome(isError bool, err error) string {
	switch {
	case err != nil:
		return OutcomeError
	case isError:
		return OutcomeToolError
	}
	return OutcomeOK
}

// ErrorType is err's class, low in cardinality (error.type): one of
// nerve's sentinels, cancelled, timeout, or _OTHER.
func ErrorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, api.ErrNotFound):
		return "not_found"
	case errors.Is(err, api.ErrUnknownTool):
		return "unknown_tool"
	case errors.Is(err, api.ErrBadArgs):
		return "bad_arguments"
	case errors.Is(err, api.ErrNotReady):
		return "not_ready"
	}
	return "_OTHER"
}
