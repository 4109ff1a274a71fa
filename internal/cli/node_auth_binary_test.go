//go:build unix

package cli

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
)

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestBinaryNodeAuthSDKOAuthServer: the TypeScript SDK's OAuth example
// server (simpleStreamableHttp.js --oauth: discovery, dynamic registration,
// PKCE) through the real binary. Before sign-in the node is ERROR and names
// `nerve node auth`; `nerve node auth` opens $BROWSER — a program that
// follows the redirects as a person's browser would — and the node comes
// up; `greet` answers; after a daemon restart it answers again with no new
// sign-in (the tokens were kept in a 0600 file, not in the session's
// file); `--logout` forgets them.
func TestBinaryNodeAuthSDKOAuthServer(t *testing.T) {
	argv := npmfix.SDKExampleServer(t, "simpleStreamableHttp.js", "--oauth")
	mcpPort, authPort := freePort(t), freePort(t)
	srv := exec.Command(argv[0], argv[1:]...)
	srv.Env = append(os.Environ(), fmt.Sprintf("MCP_PORT=%d", mcpPort), fmt.Sprintf("MCP_AUTH_PORT=%d", authPort))
	srv.Stdout, srv.Stderr = os.Stderr, os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	for _, port := range []int{mcpPort, authPort} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the SDK's OAuth example did not listen on %d: %v", port, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	url := fmt.Sprintf("http://localhost:%d/mcp", mcpPort)

	// The person's browser: follows every redirect, from the authorize
	// page to nerve's loopback callback, and notes that it ran.
	dir := t.TempDir()
	opened := filepath.Join(dir, "opened")
	browser := filepath.Join(dir, "browser")
	script := "#!/bin/sh\necho \"$1\" >> " + opened + "\nexec curl -sfL -o /dev/null \"$1\"\n"
	if err := os.WriteFile(browser, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}

	n := newRealNerve(t)
	n.Env = append(os.Environ(), "NERVE_HOME="+n.home, "BROWSER="+browser, "NERVE_TOKENS=file")
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	_, errs, code := n.Run("node", "add", "mcp", "demo", "--url", url, "--option", `oauth={"redirect_url":"`+redirect+`"}`)
	if code == 0 || !strings.Contains(errs, "run `nerve node auth demo`") {
		t.Fatalf("node add before sign-in: exit %d, %q; want the node to ask for `nerve node auth demo`", code, errs)
	}
	// The sign-in is the fix, and the only one named: a restart would not
	// sign in (issue 27).
	if strings.Contains(errs, "restart") {
		t.Errorf("node add before sign-in also suggests a restart: %q", errs)
	}
	if _, errs, _ := n.Run("call", "@demo", "greet", "name=nerve"); !strings.Contains(errs, "run `nerve node auth demo`") || strings.Contains(errs, "restart") {
		t.Errorf("a call before sign-in: %q; want `nerve node auth demo` and no restart", errs)
	}
	out, errs, code := n.Run("node", "auth", "demo")
	if code != 0 || out != "demo is READY with 6 tools\n" && !strings.HasPrefix(out, "demo is READY with ") {
		t.Fatalf("node auth: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "signed in to "+url) || !strings.Contains(errs, "(opened with "+browser) {
		t.Errorf("node auth says:\n%s", errs)
	}
	if b, _ := os.ReadFile(opened); strings.Count(string(b), "\n") != 1 || !strings.Contains(string(b), "code_challenge=") {
		t.Errorf("the browser was opened with %q; want one authorization URL with PKCE", b)
	}
	greet := func(when string) {
		t.Helper()
		out, errs, code := n.Run("call", "@demo", "greet", "name=nerve")
		if code != 0 || !strings.Contains(out, "Hello, nerve!") {
			t.Fatalf("%s: greet: exit %d %q %q", when, code, out, errs)
		}
	}
	greet("after sign-in")
	n.Must("daemon", "stop")
	greet("after a daemon restart")
	if b, _ := os.ReadFile(opened); strings.Count(string(b), "\n") != 1 {
		t.Errorf("the person was sent to sign in again: %q", b)
	}
	// The tokens are in a private file, not in the session's state file.
	state, _ := os.ReadFile(filepath.Join(n.home, "sessions", "default.json"))
	if strings.Contains(string(state), "token") {
		t.Errorf("the session's state file holds a token:\n%s", state)
	}
	files, _ := filepath.Glob(filepath.Join(n.home, "tokens", "*.json"))
	if len(files) != 1 {
		t.Fatalf("token files: %v; want one", files)
	}
	if fi, _ := os.Stat(files[0]); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(filepath.Join(n.home, "nerve.log")); strings.Contains(string(b), "refresh_token") {
		t.Errorf("the log holds a token")
	}

	out, errs, code = n.Run("node", "auth", "demo", "--logout")
	if code != 0 || !strings.Contains(errs, "forgot the sign-in to "+url) {
		t.Errorf("node auth --logout: exit %d %q %q", code, out, errs)
	}
	if files, _ := filepath.Glob(filepath.Join(n.home, "tokens", "*.json")); len(files) != 0 {
		t.Errorf("token files after --logout: %v", files)
	}
	_, errs, code = n.Run("call", "@demo", "greet", "name=nerve")
	if code == 0 || !strings.Contains(errs, "nerve node auth demo") {
		t.Errorf("a call after --logout: exit %d %q; want it to name `nerve node auth demo`", code, errs)
	}
}
