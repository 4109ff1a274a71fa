package export

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// receiver is an OTLP/HTTP endpoint that keeps each request's decoded
// JSON body and headers.
type receiver struct {
	*httptest.Server
	bodies  chan any
	headers chan http.Header
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{bodies: make(chan any, 8), headers: make(chan http.Header, 8)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				t.Errorf("gzip: %v", err)
				return
			}
			body = zr
		}
		var v any
		if err := json.NewDecoder(body).Decode(&v); err != nil {
			t.Errorf("the request is not JSON: %v", err)
		}
		r.headers <- req.Header.Clone()
		r.bodies <- v
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
	}))
	t.Cleanup(r.Close)
	return r
}

// spans makes the shapes of span nerve sends: a server span under a
// remote parent with a trace state, every attribute type nerve sets, an
// error recorded, and a client span under it with a link.
func spans(t *testing.T) []sdktrace.ReadOnlySpan {
	rec := tracetest.NewSpanRecorder()
	res := resource.NewWithAttributes("", attribute.String("service.name", "nerve"), attribute.String("nerve.process", "daemon"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res))
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("github.com/nerve-dev/nerve")
	parent, _ := trace.ParseTraceState("rojo=00f067aa0ba902b7")
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: parent, Remote: true,
	}))
	ctx, s := tr.Start(ctx, "tools/call read_text_file", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("gen_ai.tool.name", "read_text_file"), attribute.Int("server.port", 4318), attribute.Bool("b", true),
		attribute.Float64("f", 1.5), attribute.StringSlice("ss", []string{"a", "b"}), attribute.Int64Slice("is", []int64{1, 2}),
	))
	_, c := tr.Start(ctx, "execute_tool fs.read_text_file", trace.WithLinks(trace.Link{SpanContext: trace.SpanContextFromContext(ctx), Attributes: []attribute.KeyValue{attribute.String("l", "x")}}))
	c.SetStatus(codes.Ok, "")
	c.End()
	s.RecordError(errors.New("it broke"))
	s.SetStatus(codes.Error, "it broke")
	s.End()
	return rec.Ended()
}

// TestExporterMatchesOTLPTraceHTTP: what nerve's exporter sends is what
// OpenTelemetry's own OTLP/HTTP exporter sends in its JSON encoding, for
// the same spans, once both are decoded (opentelemetry-go's otlptracehttp,
// which nerve does not link: its gRPC dependencies cost every start).
func TestExporterMatchesOTLPTraceHTTP(t *testing.T) {
	ctx := context.Background()
	ss := spans(t)
	ours, theirs := newReceiver(t), newReceiver(t)
	e, err := newExporter(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ours.URL}[k]
	}, Daemon)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ExportSpans(ctx, ss); err != nil {
		t.Fatal(err)
	}
	official, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(theirs.URL+"/v1/traces"), otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
	if err != nil {
		t.Fatal(err)
	}
	defer official.Shutdown(ctx)
	if err := official.ExportSpans(ctx, ss); err != nil {
		t.Fatal(err)
	}
	got, want := <-ours.bodies, lowerIDs(<-theirs.bodies)
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("nerve's exporter sent\n%s\notlptracehttp sent\n%s", g, w)
	}
}

// TestExporterConfig: the standard variables, each TRACES_ one before its
// general one: the endpoint (a base URL gets /v1/traces, a traces URL is
// used as it is), headers in the W3C Baggage format, gzip; a protocol
// nerve does not speak is an error that says what to do.
func TestExporterConfig(t *testing.T) {
	ctx := context.Background()
	r := newReceiver(t)
	paths := make(chan string, 4)
	inner := r.Config.Handler
	r.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		paths <- req.URL.Path
		inner.ServeHTTP(w, req)
	})
	for _, tc := range []struct {
		env  map[string]string
		path string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.URL + "/", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s%20ecret,x-team=a", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}, "/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": r.URL + "/custom", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "api-key=s%20ecret,x-team=a", "OTEL_EXPORTER_OTLP_HEADERS": "x-team=b"}, "/custom"},
	} {
		e, err := newExporter(func(k string) string { return tc.env[k] }, Daemon)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.ExportSpans(ctx, spans(t)); err != nil {
			t.Fatal(err)
		}
		h := <-r.headers
		<-r.bodies
		if p := <-paths; p != tc.path || h.Get("Api-Key") != "s ecret" || h.Get("X-Team") != "a" || h.Get("Content-Type") != "application/json" {
			t.Errorf("%v: path %s, headers %v", tc.env, p, h)
		}
	}
	for env, want := range map[string]string{
		"OTEL_EXPORTER_OTLP_PROTOCOL=grpc":       "4318",
		"OTEL_EXPORTER_OTLP_ENDPOINT=localhost":  "http:// or https:// URL",
		"OTEL_EXPORTER_OTLP_TIMEOUT=10s":         "milliseconds",
		"OTEL_EXPORTER_OTLP_HEADERS=a b":         "KEY=VALUE",
		"OTEL_EXPORTER_OTLP_COMPRESSION=zstd":    "gzip or none",
		"OTEL_EXPORTER_OTLP_CERTIFICATE=/nosuch": "OTEL_EXPORTER_OTLP_CERTIFICATE",
	} {
		k, v, _ := strings.Cut(env, "=")
		_, err := newExporter(func(name string) string {
			if name == k {
				return v
			}
			return ""
		}, Daemon)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", env, err, want)
		}
	}
}

// lowerIDs writes the hex ids of an OTLP JSON document in lower case:
// the encoding's ids are case-insensitive, and otlptracehttp writes them
// in upper case.
func lowerIDs(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "traceId" || k == "spanId" || k == "parentSpanId") {
				v[k] = strings.ToLower(s)
			} else {
				v[k] = lowerIDs(x)
			}
		}
	case []any:
		for i := range v {
			v[i] = lowerIDs(v[i])
		}
	}
	return v
}
