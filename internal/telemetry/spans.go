package telemetry

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// The attributes nerve sets beside the semantic conventions' own
// (docs/observability.md lists them all).
const (
	AttrSession   = attribute.Key("nerve.session")
	AttrNode      = attribute.Key("nerve.node")
	AttrCaller    = attribute.Key("nerve.caller")
	AttrOutcome   = attribute.Key("nerve.call.outcome")
	AttrGraph     = attribute.Key("nerve.graph")
	AttrGraphRun  = attribute.Key("nerve.graph.run")
	AttrStep      = attribute.Key("nerve.graph.step")
	AttrScriptRun = attribute.Key("nerve.script.run")
	AttrScript    = attribute.Key("nerve.script.file")
)

// Semantic conventions' attributes (MCP, generative AI, HTTP, network).
const (
	attrMCPMethod     = attribute.Key("mcp.method.name")
	attrMCPSession    = attribute.Key("mcp.session.id")
	attrGenAIOp       = attribute.Key("gen_ai.operation.name")
	attrGenAITool     = attribute.Key("gen_ai.tool.name")
	attrGenAIProvider = attribute.Key("gen_ai.provider.name")
	attrGenAIModel    = attribute.Key("gen_ai.request.model")
	attrHTTPMethod    = attribute.Key("http.request.method")
	attrHTTPRoute     = attribute.Key("http.route")
	attrTransport     = attribute.Key("network.transport")
	attrServerAddr    = attribute.Key("server.address")
	attrServerPort    = attribute.Key("server.port")
)

// CLICall starts the span of `nerve call LINE` on node (the trace's root,
// unless ctx carries the context of a TRACEPARENT the command was given:
// FromEnviron).
func CLICall(ctx context.Context, node string) (context.Context, Span) {
	if !On() {
		return ctx, Span{}
	}
	return start(ctx, "nerve call", trace.SpanKindClient, AttrNode.String(node))
}

// HTTPServer starts the span of a request to the daemon's local API,
// under the trace context its headers carry (traceparent: the command
// line's span). Its name is the request's route pattern (r.Pattern, "POST
// /v1/sessions/{session}/nodes/{node}/call").
func HTTPServer(r *http.Request, session string) (context.Context, Span) {
	ctx := r.Context()
	if !On() {
		return ctx, Span{}
	}
	ctx = FromHeader(ctx, r.Header)
	name, route := r.Method+" "+r.URL.Path, r.URL.Path
	if r.Pattern != "" {
		name, route = r.Pattern, r.Pattern
		if _, path, ok := strings.Cut(r.Pattern, " "); ok {
			route = path
		} else {
			name = r.Method + " " + r.Pattern
		}
	}
	return start(ctx, name, trace.SpanKindServer,
		attrHTTPMethod.String(r.Method), attrHTTPRoute.String(route), AttrSession.String(session))
}

// SessionCall starts the span of a call through a session
// (pkg/session.Session.Call): an execute_tool span of the generative AI
// conventions, with the node, the tool, the caller (node.Caller's
// String) and, at its end (EndCall), the outcome.
func SessionCall(ctx context.Context, session, node, tool, caller string) (context.Context, Span) {
	if !On() {
		return ctx, Span{}
	}
	return start(ctx, "execute_tool "+node+"."+tool, trace.SpanKindInternal,
		attrGenAIOp.String("execute_tool"), attrGenAITool.String(tool),
		AttrSession.String(session), AttrNode.String(node), AttrCaller.String(caller))
}

// MCPServer starts the server span of a tools/call an MCP client sent to
// nerve, under the trace context of its params._meta (SEP-414), else of
// its HTTP request's headers (header is nil over stdio).
func MCPServer(ctx context.Context, tool, sessionID string, meta map[string]any, header http.Header) (context.Context, Span) {
	if !On() {
		return ctx, Span{}
	}
	pctx := FromMeta(ctx, meta)
	if !trace.SpanContextFromContext(pctx).IsRemote() && header != nil {
		pctx = FromHeader(ctx, header)
	}
	transport := "pipe"
	if header != nil {
		transport = "tcp"
	}
	attrs := []attribute.KeyValue{attrMCPMethod.String("tools/call"), attrGenAIOp.String("execute_tool"),
		attrGenAITool.String(tool), attrTransport.String(transport)}
	if sessionID != "" {
		attrs = append(attrs, attrMCPSession.String(sessionID))
	}
	return start(pctx, "tools/call "+tool, trace.SpanKindServer, attrs...)
}

// MCPClient starts the client span of a tools/call nerve sends to an MCP
// server (an mcp node). serverURL is empty for a server over stdio. The
// span's context goes to the server in the request's _meta (InjectMeta)
// and, over HTTP, in its headers (Transport).
func MCPClient(ctx context.Context, node, tool, serverURL string) (context.Context, Span) {
	if !On() {
		return ctx, Span{}
	}
	attrs := []attribute.KeyValue{attrMCPMethod.String("tools/call"), attrGenAIOp.String("execute_tool"),
		attrGenAITool.String(tool), AttrNode.String(node)}
	if serverURL == "" {
		attrs = append(attrs, attrTransport.String("pipe"))
	} else {
		attrs = append(attrs, attrTransport.String("tcp"))
		if u, err := url.Parse(serverURL); err == nil {
			attrs = append(attrs, attrServerAddr.String(u.Hostname()))
			if p, err := strconv.Atoi(u.Port()); err == nil {
				attrs = append(attrs, attrServerPort.Int(p))
			}
		}
	}
	return start(ctx, "tools/call "+tool, trace.SpanKindClient, attrs...)
}

// Chat starts the client span of one request of an llm node to its model
// provider (the generative AI conventions' inference span); the request
// carries its context as headers (InjectHeader).
func Chat(ctx context.Context, provider, model, endpoint string) (context.Context, Span) {
	if !On() {
		return ctx, Span{}
	}
	attrs := []attribute.KeyValue{attrGenAIOp.String("chat"), attrGenAIProvider.String(provider), attrGenAIModel.String(model)}
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil {
			host = u.Host
		}
		attrs = append(attrs, attrServerAddr.String(host))
		if p, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, attrServerPort.Int(p))
		}
	}
	return start(ctx, "chat "+model, trace.SpanKindClient, attrs...)
}

// GraphRun starts the span of a run of graph: the parent of its steps'
// spans (GraphStep).
func GraphRun(ctx context.Context, graph, run string) (context.Context, Span) {
	if !On() {
		return ctx, Span{}
	}
	return start(ctx, "graph run "+graph, trace.SpanKindInternal, AttrGraph.String(graph), AttrGraphRun.String(run))
}

// GraphStep starts the span of one step of a graph run: the parent of
// the step's calls.
func GraphStep(ctx context.Context, step string) (context.Context, Span) {
	if !On() {
		return ctx, Span{}
	}
	return start(ctx, "graph step "+step, trace.SpanKindInternal, AttrStep.String(step))
}

// Script starts the span of a code-mode script's run: the parent of the
// script's tool calls. The run's id (AttrScriptRun) is set once known.
func Script(ctx context.Context, file string) (context.Context, Span) {
	if !On() {
		return ctx, Span{}
	}
	return start(ctx, "script run", trace.SpanKindInternal, AttrScript.String(file))
}
