package export

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/nerve-dev/nerve/internal/httpretry"
)

// exporter sends spans to an OTLP/HTTP endpoint in OTLP's JSON Protobuf
// encoding (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding),
// which every OTLP/HTTP receiver reads beside binary Protobuf. It is the
// one part of the export nerve writes itself: the official otlptracehttp
// links gRPC and Protobuf, whose package initialisers cost every nerve
// start, `nerve call` included, about a millisecond (docs/performance.md,
// *Tracing and metrics*). TestExporterMatchesOTLPTraceHTTP checks its
// requests against otlptracehttp's JSON, byte for byte once decoded.
type exporter struct {
	url      string
	headers  http.Header
	gzip     bool
	timeout  time.Duration
	client   *http.Client
	shutdown chan struct{}
}

// newExporter reads the OTEL_EXPORTER_OTLP_* variables with get, each
// TRACES_ one before its general one, as the OTLP exporter specification
// says (https://opentelemetry.io/docs/specs/otel/protocol/exporter/). A
// command's (role CLI) exports wait at most CLIFlush unless
// OTEL_EXPORTER_OTLP_TIMEOUT says otherwise, and are never retried.
func newExporter(get func(string) string, role Role) (*exporter, error) {
	signal := func(name string) string {
		if v := strings.TrimSpace(get("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
			return v
		}
		return strings.TrimSpace(get("OTEL_EXPORTER_OTLP_" + name))
	}
	e := &exporter{timeout: 10 * time.Second, headers: http.Header{}, shutdown: make(chan struct{})}
	if role == CLI {
		e.timeout = CLIFlush
	}
	switch p := signal("PROTOCOL"); p {
	case "", "http/json", "http/protobuf":
		// Both are OTLP/HTTP: the same URL, which reads either encoding.
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: nerve sends OTLP over HTTP (http/json); name the collector's OTLP/HTTP port, 4318 by default", p)
	}
	if v := strings.TrimSpace(get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		e.url = v // used as it is
	} else if v := strings.TrimSpace(get("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		e.url = strings.TrimSuffix(v, "/") + "/v1/traces"
	} else {
		e.url = "http://localhost:4318/v1/traces"
	}
	u, err := url.Parse(e.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %q is not an http:// or https:// URL (e.g. http://localhost:4318)", e.url)
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		v := strings.TrimSpace(get(name))
		if v == "" {
			continue
		}
		// The W3C Baggage format, values percent-encoded: otel's own
		// parser of it.
		b, err := baggage.Parse(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w (write KEY=VALUE pairs separated by commas, values percent-encoded)", name, err)
		}
		for _, m := range b.Members() {
			e.headers.Set(m.Key(), m.Value())
		}
	}
	if v := signal("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT=%s: give milliseconds, e.g. 10000", v)
		}
		e.timeout = time.Duration(ms) * time.Millisecond
	}
	switch c := signal("COMPRESSION"); c {
	case "", "none":
	case "gzip":
		e.gzip = true
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_COMPRESSION=%s: use gzip or none", c)
	}
	tlsConf, err := tlsConfig(signal)
	if err != nil {
		return nil, err
	}
	var base http.RoundTripper = http.DefaultTransport
	if tlsConf != nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = tlsConf
		base = t
	}
	if role == Daemon {
		// OTLP's retryable answers are httpretry's (429, 502, 503, 504);
		// a span sent twice is harmless, so any of them is sent again.
		base = &httpretry.Transport{Base: base, Resend: func(*http.Request, int) bool { return true }}
	}
	e.client = &http.Client{Transport: base}
	return e, nil
}

// tlsConfig reads the CA and client certificate files, if named.
func tlsConfig(signal func(string) string) (*tls.Config, error) {
	ca, cert, key := signal("CERTIFICATE"), signal("CLIENT_CERTIFICATE"), signal("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	conf := &tls.Config{}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %s holds no PEM certificate", ca)
		}
	}
	if cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY: %w", err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	return conf, nil
}

// ExportSpans sends spans in one request, bounded by the exporter's
// timeout (OTEL_EXPORTER_OTLP_TIMEOUT) and ctx.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	select {
	case <-e.shutdown:
		return errors.New("the OTLP exporter is shut down")
	default:
	}
	body, err := json.Marshal(request(spans))
	if err != nil {
		return fmt.Errorf("encoding spans: %w", err)
	}
	if e.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		_ = zw.Close()
		body = b.Bytes()
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range e.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	if e.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("sending spans to %s: %w", e.url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("sending spans to %s: %s: %s", e.url, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// Shutdown stops the exporter: later exports fail.
func (e *exporter) Shutdown(context.Context) error {
	select {
	case <-e.shutdown:
	default:
		close(e.shutdown)
	}
	return nil
}

// The OTLP JSON request: opentelemetry-proto's
// collector/trace/v1.ExportTraceServiceRequest and the messages under it,
// with the JSON Protobuf encoding's rules: lowerCamelCase names, trace and
// span ids in hex, enums as numbers, 64-bit integers as decimal strings.
type (
	otlpRequest struct {
		ResourceSpans []resourceSpans `json:"resourceSpans"`
	}
	resourceSpans struct {
		Resource   otlpResource `json:"resource"`
		ScopeSpans []scopeSpans `json:"scopeSpans"`
		SchemaURL  string       `json:"schemaUrl,omitempty"`
	}
	otlpResource struct {
		Attributes []keyValue `json:"attributes,omitempty"`
	}
	scopeSpans struct {
		Scope     otlpScope `json:"scope"`
		Spans     []span    `json:"spans"`
		SchemaURL string    `json:"schemaUrl,omitempty"`
	}
	otlpScope struct {
		Name       string     `json:"name,omitempty"`
		Version    string     `json:"version,omitempty"`
		Attributes []keyValue `json:"attributes,omitempty"`
	}
	span struct {
		TraceID                string     `json:"traceId"`
		SpanID                 string     `json:"spanId"`
		TraceState             string     `json:"traceState,omitempty"`
		ParentSpanID           string     `json:"parentSpanId,omitempty"`
		Flags                  uint32     `json:"flags,omitempty"`
		Name                   string     `json:"name"`
		Kind                   int        `json:"kind,omitempty"`
		StartTimeUnixNano      uint64     `json:"startTimeUnixNano,string"`
		EndTimeUnixNano        uint64     `json:"endTimeUnixNano,string"`
		Attributes             []keyValue `json:"attributes,omitempty"`
		DroppedAttributesCount int        `json:"droppedAttributesCount,omitempty"`
		Events                 []event    `json:"events,omitempty"`
		DroppedEventsCount     int        `json:"droppedEventsCount,omitempty"`
		Links                  []link     `json:"links,omitempty"`
		DroppedLinksCount      int        `json:"droppedLinksCount,omitempty"`
		Status                 *status    `json:"status,omitempty"`
	}
	event struct {
		TimeUnixNano           uint64     `json:"timeUnixNano,string"`
		Name                   string     `json:"name"`
		Attributes             []keyValue `json:"attributes,omitempty"`
		DroppedAttributesCount int        `json:"droppedAttributesCount,omitempty"`
	}
	link struct { // otlptracehttp sends no trace state with a link either
		TraceID                string     `json:"traceId"`
		SpanID                 string     `json:"spanId"`
		Attributes             []keyValue `json:"attributes,omitempty"`
		DroppedAttributesCount int        `json:"droppedAttributesCount,omitempty"`
		Flags                  uint32     `json:"flags,omitempty"`
	}
	status struct {
		Message string `json:"message,omitempty"`
		Code    int    `json:"code,omitempty"`
	}
	keyValue struct {
		Key   string   `json:"key"`
		Value anyValue `json:"value"`
	}
	anyValue struct {
		StringValue *string     `json:"stringValue,omitempty"`
		BoolValue   *bool       `json:"boolValue,omitempty"`
		IntValue    *int64      `json:"intValue,omitempty,string"`
		DoubleValue *float64    `json:"doubleValue,omitempty"`
		ArrayValue  *arrayValue `json:"arrayValue,omitempty"`
	}
	arrayValue struct {
		Values []anyValue `json:"values"`
	}
)

// Span flags (opentelemetry-proto's SpanFlags): the W3C trace flags in
// the low byte, and whether the parent's context is known and remote.
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// request groups spans by resource and instrumentation scope.
func request(spans []sdktrace.ReadOnlySpan) *otlpRequest {
	type scopeKey struct {
		res   *resource.Resource
		scope instrumentation.Scope
	}
	req := &otlpRequest{}
	resIndex := map[*resource.Resource]int{}
	scopeIndex := map[scopeKey]int{}
	for _, s := range spans {
		res := s.Resource()
		ri, ok := resIndex[res]
		if !ok {
			ri = len(req.ResourceSpans)
			resIndex[res] = ri
			req.ResourceSpans = append(req.ResourceSpans, resourceSpans{Resource: otlpResource{Attributes: attrs(res.Attributes())}, SchemaURL: res.SchemaURL()})
		}
		rs := &req.ResourceSpans[ri]
		sk := scopeKey{res, s.InstrumentationScope()}
		si, ok := scopeIndex[sk]
		if !ok {
			si = len(rs.ScopeSpans)
			scopeIndex[sk] = si
			sc := s.InstrumentationScope()
			rs.ScopeSpans = append(rs.ScopeSpans, scopeSpans{Scope: otlpScope{Name: sc.Name, Version: sc.Version, Attributes: attrs(sc.Attributes.ToSlice())}, SchemaURL: sc.SchemaURL})
		}
		rs.ScopeSpans[si].Spans = append(rs.ScopeSpans[si].Spans, spanOf(s))
	}
	return req
}

func spanOf(s sdktrace.ReadOnlySpan) span {
	sc := s.SpanContext()
	out := span{
		TraceID:                sc.TraceID().String(),
		SpanID:                 sc.SpanID().String(),
		TraceState:             sc.TraceState().String(),
		Flags:                  uint32(sc.TraceFlags()) | flagHasIsRemote,
		Name:                   s.Name(),
		Kind:                   int(s.SpanKind()), // SpanKind's numbers are OTLP's
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             attrs(s.Attributes()),
		DroppedAttributesCount: s.DroppedAttributes(),
		DroppedEventsCount:     s.DroppedEvents(),
		DroppedLinksCount:      s.DroppedLinks(),
	}
	if p := s.Parent(); p.IsValid() {
		out.ParentSpanID = p.SpanID().String()
		if p.IsRemote() {
			out.Flags |= flagIsRemote
		}
	}
	for _, ev := range s.Events() {
		out.Events = append(out.Events, event{TimeUnixNano: unixNano(ev.Time), Name: ev.Name, Attributes: attrs(ev.Attributes), DroppedAttributesCount: ev.DroppedAttributeCount})
	}
	for _, l := range s.Links() {
		lf := uint32(l.SpanContext.TraceFlags()) | flagHasIsRemote
		if l.SpanContext.IsRemote() {
			lf |= flagIsRemote
		}
		out.Links = append(out.Links, link{
			TraceID: l.SpanContext.TraceID().String(), SpanID: l.SpanContext.SpanID().String(),
			Attributes: attrs(l.Attributes), DroppedAttributesCount: l.DroppedAttributeCount, Flags: lf,
		})
	}
	switch st := s.Status(); st.Code {
	case codes.Error:
		out.Status = &status{Code: 2, Message: st.Description} // STATUS_CODE_ERROR
	case codes.Ok:
		out.Status = &status{Code: 1} // STATUS_CODE_OK
	default:
		out.Status = &status{}
	}
	return out
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() || t.UnixNano() < 0 {
		return 0
	}
	return uint64(t.UnixNano())
}

func attrs(kvs []attribute.KeyValue) []keyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]keyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, keyValue{Key: string(kv.Key), Value: value(kv.Value)})
	}
	return out
}

func value(v attribute.Value) anyValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return anyValue{BoolValue: &b}
	case attribute.INT64:
		i := v.AsInt64()
		return anyValue{IntValue: &i}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			s := strconv.FormatFloat(f, 'g', -1, 64) // JSON has no NaN: as text
			return anyValue{StringValue: &s}
		}
		return anyValue{DoubleValue: &f}
	case attribute.BOOLSLICE:
		a := &arrayValue{Values: []anyValue{}}
		for _, b := range v.AsBoolSlice() {
			a.Values = append(a.Values, value(attribute.BoolValue(b)))
		}
		return anyValue{ArrayValue: a}
	case attribute.INT64SLICE:
		a := &arrayValue{Values: []anyValue{}}
		for _, i := range v.AsInt64Slice() {
			a.Values = append(a.Values, value(attribute.Int64Value(i)))
		}
		return anyValue{ArrayValue: a}
	case attribute.FLOAT64SLICE:
		a := &arrayValue{Values: []anyValue{}}
		for _, f := range v.AsFloat64Slice() {
			a.Values = append(a.Values, value(attribute.Float64Value(f)))
		}
		return anyValue{ArrayValue: a}
	case attribute.STRINGSLICE:
		a := &arrayValue{Values: []anyValue{}}
		for _, s := range v.AsStringSlice() {
			a.Values = append(a.Values, value(attribute.StringValue(s)))
		}
		return anyValue{ArrayValue: a}
	}
	s := v.Emit()
	return anyValue{StringValue: &s}
}
