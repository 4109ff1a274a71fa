package daemon

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/internal/paths"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

func testRegistry() *session.Registry {
	r := &session.Registry{}
	r.Register(identity.Kind, identity.New)
	return r
}

func persistent(t *testing.T, dir string) *Daemon {
	t.Helper()
	d, err := New(&Options{Registry: testRegistry(), Persist: true, Paths: paths.Under(dir, filepath.Join(dir, "run")), CallLog: filepath.Join(dir, "calls.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	return d
}

func TestSaveAndRestore(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	d := persistent(t, dir)
	if err := d.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := d.session(ctx, "work", true)
	if err != nil {
		t.Fatal(err)
	}
	specs := []node.Spec{
		{ID: "a", Kind: "identity", Env: map[string]string{"TOKEN": "${TOKEN}"}},
		{ID: "b", Kind: "identity", Cwd: "${HOME}/x"},
	}
	for _, sp := range specs {
		if _, err := s.Add(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Remove(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	d.Close(ctx)

	raw, err := os.ReadFile(filepath.Join(dir, "sessions", "work.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"${TOKEN}"`) {
		t.Errorf("state file expanded ${TOKEN}: %s", raw)
	}
	d2 := persistent(t, dir)
	if err := d2.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d2.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	s2, err := d2.session(ctx, "work", false)
	if err != nil {
		t.Fatalf("session work did not come back: %v", err)
	}
	infos := s2.Infos()
	if len(infos) != 1 || infos[0].ID != "a" || infos[0].State != node.Ready {
		t.Fatalf("restored nodes %+v; want a READY", infos)
	}
	if sp, _ := s2.Spec("a"); sp.Env["TOKEN"] != "${TOKEN}" {
		t.Errorf("restored spec env %v", sp.Env)
	}
}

func TestCorruptStateIsMovedAside(t *testing.T) {
	tests := []struct{ name, content string }{
		{"not json", "{\"version\": 1, \"nodes\": ["},
		{"newer format", `{"version": 99, "session": "work", "nodes": []}`},
		{"bad id", `{"version": 1, "session": "work", "nodes": [{"id": "A.B", "kind": "identity"}]}`},
		{"duplicate", `{"version": 1, "session": "work", "nodes": [{"id": "a", "kind": "identity"}, {"id": "a", "kind": "identity"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			sessions := filepath.Join(dir, "sessions")
			os.MkdirAll(sessions, 0o700)
			path := filepath.Join(sessions, "work.json")
			os.WriteFile(path, []byte(tt.content), 0o600)
			d := persistent(t, dir)
			if err := d.Restore(context.Background()); err != nil {
				t.Fatal(err)
			}
			notices := d.Notices()
			if len(notices) != 1 || !strings.Contains(notices[0], "corrupt") || !strings.Contains(notices[0], "work.json.corrupt-") {
				t.Errorf("notices %q; want one naming the moved file", notices)
			}
			moved, _ := filepath.Glob(path + ".corrupt-*")
			if len(moved) != 1 {
				t.Fatalf("corrupt file not moved aside: %v", moved)
			}
			if data, _ := os.ReadFile(moved[0]); string(data) != tt.content {
				t.Errorf("moved file changed: %q", data)
			}
		})
	}
}

// A saved node whose kind this daemon cannot build stays in the state
// file (never silently lost) and can be removed.
func TestUnbuildableNodeIsKept(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	sessions := filepath.Join(dir, "sessions")
	os.MkdirAll(sessions, 0o700)
	path := filepath.Join(sessions, "default.json")
	os.WriteFile(path, []byte(`{"version":1,"session":"default","nodes":[{"id":"fs","kind":"future"},{"id":"a","kind":"identity"}]}`), 0o600)
	d := persistent(t, dir)
	if err := d.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	s, _ := d.session(ctx, DefaultSession, false)
	if _, err := s.Add(ctx, node.Spec{ID: "b", Kind: "identity"}); err != nil {
		t.Fatal(err)
	}
	specs, _, err := loadState(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, sp := range specs {
		ids = append(ids, sp.ID)
	}
	if got := strings.Join(ids, ","); got != "a,b,fs" {
		t.Errorf("saved nodes %s; want a,b,fs", got)
	}
	if n := d.Notices(); len(n) != 1 || !strings.Contains(n[0], `"fs"`) {
		t.Errorf("notices %q; want one about fs", n)
	}
	if !d.dropOrphan(DefaultSession, "fs") {
		t.Fatal("fs could not be removed")
	}
	specs, _, _ = loadState(path)
	if len(specs) != 2 {
		t.Errorf("after removing fs: %v", specs)
	}
}

func TestCallLogRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "calls.jsonl")
	l, err := openCallLog(path, 600)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	for range 10 {
		if err := l.record("s", &session.CallInfo{Node: "n", Tool: "t", Arguments: json.RawMessage(`{"text":"hello"}`), Start: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	cur, _ := os.ReadFile(path)
	old, _ := os.ReadFile(path + ".1")
	if len(cur) > 600 || len(old) == 0 {
		t.Fatalf("log %d bytes, rotated %d bytes; want ≤600 and some", len(cur), len(old))
	}
	var rec CallRecord
	line, _, _ := strings.Cut(string(cur), "\n")
	if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Node != "n" || string(rec.Args) != `{"text":"hello"}` {
		t.Errorf("record %+v, %v", rec, err)
	}
}

// serveSocket serves d on a Unix socket in a short temp folder.
func serveSocket(t *testing.T, d *Daemon) string {
	sock := filepath.Join(testutil.SocketDir(t), "s")
	stop, done := startServe(t, d, sock)
	t.Cleanup(func() { stop(); <-done })
	return sock
}

// startServe serves d on a new Unix socket sock until stop; done gives
// Serve's error.
func startServe(t *testing.T, d *Daemon, sock string) (stop context.CancelFunc, done <-chan error) {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- d.Serve(ctx, ln) }()
	return cancel, errc
}

// socketClient is an HTTP client whose every request goes to the
// daemon's socket sock; its idle connections close when the test ends.
func socketClient(t *testing.T, sock string) *http.Client {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

func TestGuard(t *testing.T) {
	d, err := New(&Options{Version: "v9"})
	if err != nil {
		t.Fatal(err)
	}
	sock := serveSocket(t, d)
	hc := socketClient(t, sock)
	tests := []struct {
		name   string
		origin string
		path   string
		status int
		code   string
	}{
		{"plain request", "", "/v1/version", 200, ""},
		{"from a web page", "https://evil.example", "/v1/version", 403, api.CodeForbidden},
		{"unknown route", "", "/v2/version", 404, api.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", "http://nerve"+tt.path, nil)
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status %d; want %d", resp.StatusCode, tt.status)
			}
			if resp.Header.Get(api.HeaderVersion) != "v9" || resp.Header.Get(api.HeaderAPIVersion) != api.Version {
				t.Errorf("version headers %v", resp.Header)
			}
			if tt.code != "" {
				var body api.ErrorBody
				json.NewDecoder(resp.Body).Decode(&body)
				if body.Error.Code != tt.code {
					t.Errorf("code %q; want %q", body.Error.Code, tt.code)
				}
			}
		})
	}
}
