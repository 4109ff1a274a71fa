package daemon

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/paths"
)

func shortPaths(t *testing.T) paths.Paths {
	dir, err := os.MkdirTemp("", "nr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return paths.Under(dir, filepath.Join(dir, "run"))
}

// runDaemon runs Run in the background and waits until it is ready.
func runDaemon(t *testing.T, p paths.Paths) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Options{Registry: testRegistry(), Paths: p}, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("Run: %v", err)
	}
	return func() error { cancel(); return <-done }
}

func TestRunReplacesStaleSocketOnly(t *testing.T) {
	p := shortPaths(t)
	if err := p.Ensure(); err != nil {
		t.Fatal(err)
	}
	// A stale socket: a file nobody listens on.
	ln, err := net.Listen("unix", p.Socket)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	stop := runDaemon(t, p)
	fi, err := os.Stat(p.Socket)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v, %v; want mode 0600", fi, err)
	}
	if fi, _ := os.Stat(p.Runtime); fi.Mode().Perm() != 0o700 {
		t.Errorf("runtime folder mode %v; want 0700", fi.Mode().Perm())
	}
	// A second daemon finds the first one's lock and leaves its socket.
	err = Run(context.Background(), Options{Registry: testRegistry(), Paths: p}, nil)
	if !errors.Is(err, ErrRunning) {
		t.Errorf("second Run: %v; want ErrRunning", err)
	}
	if _, err := net.Dial("unix", p.Socket); err != nil {
		t.Errorf("the live daemon's socket was harmed: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.Socket); !os.IsNotExist(err) {
		t.Errorf("socket left behind after stop: %v", err)
	}
}

// A live socket is never replaced, even when its owner holds no lock.
func TestRunKeepsLiveSocket(t *testing.T) {
	p := shortPaths(t)
	if err := p.Ensure(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", p.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := Run(ctx, Options{Paths: p}, nil); !errors.Is(err, ErrRunning) {
		t.Fatalf("Run next to a live socket: %v; want ErrRunning", err)
	}
	if _, err := os.Stat(p.Socket); err != nil {
		t.Errorf("live socket removed: %v", err)
	}
}

func TestGuardRefusesOtherUID(t *testing.T) {
	d, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		peer   *peer
		status int
	}{
		{"same uid", &peer{uid: os.Getuid()}, 200},
		{"other uid", &peer{uid: os.Getuid() + 1}, 403},
		{"unknown peer", &peer{uid: -1, err: errors.New("no creds")}, map[bool]int{true: 403, false: 200}[peerCredSupported]},
		{"in memory", nil, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/v1/version", nil)
			if tt.peer != nil {
				req = req.WithContext(context.WithValue(req.Context(), peerKey{}, tt.peer))
			}
			w := httptest.NewRecorder()
			d.Handler().ServeHTTP(w, req)
			if w.Code != tt.status {
				t.Errorf("status %d; want %d (%s)", w.Code, tt.status, w.Body)
			}
		})
	}
	_ = http.StatusOK
}
