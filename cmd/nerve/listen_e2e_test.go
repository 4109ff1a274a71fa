//go:build linux

package main_test

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

// TestDaemonStartListen serves the session MCP endpoint at the address
// `nerve daemon start --listen` names, and `nerve mcp url` says so.
func TestDaemonStartListen(t *testing.T) {
	h := newHome(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	h.must("daemon", "start", "--listen", "127.0.0.1:"+port)
	url := h.must("mcp", "url")
	if !strings.Contains(url, "http://127.0.0.1:"+port+"/mcp/default") {
		t.Errorf("`nerve mcp url` printed %q; want the endpoint on port %s", url, port)
	}
	// A running daemon keeps its address; the person is told.
	_, errs, code := h.run("daemon", "start", "--listen", "127.0.0.1:1")
	if code != 0 || !strings.Contains(errs, "--listen applies when the daemon starts") {
		t.Errorf("second start: exit %d, stderr %q; want 0 and a note that --listen did not apply", code, errs)
	}
}
