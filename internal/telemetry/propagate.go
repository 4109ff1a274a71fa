package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// w3c reads and writes the W3C trace context (traceparent, tracestate):
// the one format nerve carries, in headers, _meta and the environment.
var w3c propagation.TraceContext

// FromHeader returns ctx with the remote span context h carries, if any.
func FromHeader(ctx context.Context, h http.Header) context.Context {
	if h.Get("Traceparent") == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.HeaderCarrier(h))
}

// InjectHeader sets h's traceparent (and tracestate) to ctx's span
// context, if it has one. It works with tracing off too: a context
// carried from TRACEPARENT (FromEnviron) passes on.
func InjectHeader(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		w3c.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// metaCarrier is an MCP request's params._meta as a carrier: SEP-414
// puts traceparent and tracestate there as top-level string keys.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// FromMeta returns ctx with the remote span context an MCP request's
// _meta carries (SEP-414), if any.
func FromMeta(ctx context.Context, meta map[string]any) context.Context {
	if _, ok := meta["traceparent"].(string); !ok {
		return ctx
	}
	return w3c.Extract(ctx, metaCarrier(meta))
}

// InjectMeta puts ctx's span context in an MCP request's _meta as
// traceparent and tracestate (SEP-414), making meta if it is nil, and
// returns it; meta comes back as it was when tracing is off or ctx has no
// span context.
func InjectMeta(ctx context.Context, meta map[string]any) map[string]any {
	if !On() || !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	if meta == nil {
		meta = map[string]any{}
	}
	delete(meta, "tracestate") // a client's, forwarded: not this span's
	w3c.Inject(ctx, metaCarrier(meta))
	return meta
}

// FromEnviron returns ctx with the remote span context of the
// TRACEPARENT and TRACESTATE variables getenv reads (how a program that
// runs nerve in a trace hands it on, as for other command-line tools),
// if any.
func FromEnviron(ctx context.Context, getenv func(string) string) context.Context {
	tp := getenv("TRACEPARENT")
	if tp == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier{"traceparent": tp, "tracestate": getenv("TRACESTATE")})
}

// Transport returns base with each request's headers carrying the trace
// context of the request's own context (InjectHeader): an mcp node's
// requests to a server over HTTP. With tracing off it only calls base.
func Transport(base http.RoundTripper) http.RoundTripper { return transport{base} }

type transport struct{ base http.RoundTripper }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !On() || !trace.SpanContextFromContext(req.Context()).IsValid() {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context()) // a RoundTripper must not change its request
	InjectHeader(req.Context(), req.Header)
	return t.base.RoundTrip(req)
}
