//go:build unix

// Package jaeger runs a real Jaeger (v1.76.0's all-in-one, `cmd/jaeger`)
// for the trace tests: an OTLP/HTTP receiver and the query API on free
// loopback ports, traces kept in memory, read back from the query API
// (/api/traces). Tests call it; nothing else may import it.
//
// Jaeger is built from the module proxy in a module of its own (tool/:
// its go.mod and go.sum pin it, and keep its dependencies out of nerve's),
// once per machine: the binary is kept in the temporary folder under the
// hash of that module's files, and a file lock keeps test processes that
// run at once from building it twice. Where it cannot be built the test
// is skipped, or fails under NERVE_REQUIRE_E2E=1.
package jaeger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// Jaeger is one all-in-one process, stopped when its test ends.
type Jaeger struct {
	otlp  string // http://127.0.0.1:PORT
	query string // http://127.0.0.1:PORT
}

// OTLP is the base URL of its OTLP/HTTP receiver: what
// OTEL_EXPORTER_OTLP_ENDPOINT names.
func (j *Jaeger) OTLP() string { return j.otlp }

// config runs only what the tests need: the OTLP/HTTP receiver, memory
// storage and the query API, on the ports given, and none of the
// collector's own telemetry (whose fixed port tests running at once would
// share).
const config = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

// Start runs Jaeger until t ends, building it first if this machine has
// not.
func Start(t testing.TB) *Jaeger {
	t.Helper()
	bin, err := binary(t)
	testutil.RequireE2E(t, "Jaeger (built from github.com/jaegertracing/jaeger v1.76.0)", err)
	ports := freePorts(t, 3)
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, config, ports[0], ports[1], ports[2]), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--config", "file:"+cfg)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Jaeger: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	j := &Jaeger{otlp: fmt.Sprintf("http://127.0.0.1:%d", ports[2]), query: fmt.Sprintf("http://127.0.0.1:%d", ports[0])}
	testutil.WaitFor(t, 60*time.Second, func() bool {
		select {
		case <-exited:
			t.Fatalf("Jaeger exited at start:\n%s", logs.String())
		default:
		}
		return j.get(context.Background(), "/api/services", nil) == nil && dials(ports[2])
	}, "Jaeger's query API and OTLP receiver")
	return j
}

func dials(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// freePorts returns n loopback ports free just now (the kernel's picks).
func freePorts(t testing.TB, n int) []int {
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// Trace is a trace as the query API answers it (the fields used here).
type Trace struct {
	TraceID   string             `json:"traceID"`
	Spans     []Span             `json:"spans"`
	Processes map[string]Process `json:"processes"`
}

// Span is one span of a Trace.
type Span struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
	StartTime int64  `json:"startTime"`
	Duration  int64  `json:"duration"`
}

// Process is the service a span came from.
type Process struct {
	ServiceName string `json:"serviceName"`
	Tags        []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

// Parent is the id of the span s is the child of, "" for a root.
func (s *Span) Parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// Tag is the value of s's tag key as text ("" when it has none).
func (s *Span) Tag(key string) string {
	for _, kv := range s.Tags {
		if kv.Key == key {
			return fmt.Sprint(kv.Value)
		}
	}
	return ""
}

// Named returns the spans of tr named name.
func (tr *Trace) Named(name string) []*Span {
	var out []*Span
	for i := range tr.Spans {
		if tr.Spans[i].OperationName == name {
			out = append(out, &tr.Spans[i])
		}
	}
	return out
}

// Tree draws tr as an indented tree of span names, each followed by its
// process's nerve.process resource attribute (cli, daemon) when it has
// one; children sorted by name, then start.
func (tr *Trace) Tree() string {
	byID := map[string]bool{}
	for _, s := range tr.Spans {
		byID[s.SpanID] = true
	}
	kids := map[string][]*Span{}
	var roots []*Span
	for i := range tr.Spans {
		s := &tr.Spans[i]
		if p := s.Parent(); p != "" && byID[p] {
			kids[p] = append(kids[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var draw func([]*Span, int)
	draw = func(ss []*Span, depth int) {
		sort.Slice(ss, func(i, j int) bool {
			if ss[i].OperationName != ss[j].OperationName {
				return ss[i].OperationName < ss[j].OperationName
			}
			return ss[i].StartTime < ss[j].StartTime
		})
		for _, s := range ss {
			b.WriteString(strings.Repeat("  ", depth) + s.OperationName)
			for _, kv := range tr.Processes[s.ProcessID].Tags {
				if kv.Key == "nerve.process" {
					fmt.Fprintf(&b, " [%v]", kv.Value)
				}
			}
			b.WriteString("\n")
			draw(kids[s.SpanID], depth+1)
		}
	}
	draw(roots, 0)
	return b.String()
}

// Traces returns the traces of service the query API has now.
func (j *Jaeger) Traces(ctx context.Context, service string) ([]Trace, error) {
	var out struct {
		Data []Trace `json:"data"`
	}
	err := j.get(ctx, "/api/traces?limit=100&lookback=1h&service="+url.QueryEscape(service), &out)
	return out.Data, err
}

// WaitTrace waits until service has a trace for which ok is true and
// returns it: spans of one trace arrive from several processes, each when
// it exports.
func (j *Jaeger) WaitTrace(t testing.TB, service string, ok func(*Trace) bool) *Trace {
	t.Helper()
	var found *Trace
	var last []Trace
	deadline := time.Now().Add(30 * time.Second)
	for found == nil {
		trs, err := j.Traces(context.Background(), service)
		if err != nil {
			t.Fatalf("asking Jaeger for the traces of %s: %v", service, err)
		}
		last = trs
		for i := range trs {
			if ok(&trs[i]) {
				found = &trs[i]
				break
			}
		}
		if found != nil {
			break
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, tr := range last {
				b.WriteString(tr.Tree() + "--\n")
			}
			t.Fatalf("no trace of service %s as wanted within 30s; Jaeger has:\n%s", service, b.String())
		}
		time.Sleep(100 * time.Millisecond) // the query API has no way to wait
	}
	return found
}

func (j *Jaeger) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.query+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", path, resp.Status, body)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(body, out)
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// binary returns the path of the Jaeger binary, building it if this
// machine has no build of the tool module's present go.mod and go.sum.
func binary(t testing.TB) (string, error) {
	buildOnce.Do(func() { buildPath, buildErr = build(t, testutil.RepoRoot(t)) })
	return buildPath, buildErr
}

func build(t testing.TB, root string) (string, error) {
	dir := filepath.Join(root, "internal", "testutil", "jaeger", "tool")
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	h.Write([]byte(runtime.Version()))
	base := filepath.Join(os.TempDir(), "nerve-jaeger-"+hex.EncodeToString(h.Sum(nil))[:16])
	bin := filepath.Join(base, "jaeger")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(base+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil // another test process built it meanwhile
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is not on PATH: %w", err)
	}
	start := time.Now()
	cmd := exec.Command(goBin, "build", "-o", bin+".tmp", "github.com/jaegertracing/jaeger/cmd/jaeger")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build in %s: %w\n%s", dir, err, out)
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return "", err
	}
	t.Logf("jaeger: built Jaeger in %v", time.Since(start).Round(time.Second))
	return bin, nil
}
