//go:build linux

package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestBinarySecretsFile: ${keychain:NAME} with the file fallback
// (NERVE_TOKENS=file, as where no keychain answers).
func TestBinarySecretsFile(t *testing.T) {
	n := newRealNerve(t)
	secretE2E(t, n, testutil.BuildBinary(t, "./fixtures/mcpserver"), "file")
}

// secretChildEnv marks the test binary that TestBinarySecretsKeychain runs
// inside a private D-Bus session with a Secret Service of its own; the
// binaries it drives come built, in secretBinsEnv.
const (
	secretChildEnv = "NERVE_TEST_SECRET_KEYCHAIN_CHILD"
	secretBinsEnv  = "NERVE_TEST_SECRET_BINS"
)

// TestBinarySecretsKeychain: ${keychain:NAME} in a real Secret Service
// (gnome-keyring, as on a Linux desktop) on a private D-Bus session, never
// the keychain of whoever runs the test: the test binary runs again
// inside dbus-run-session, and the daemon it starts inherits that bus.
func TestBinarySecretsKeychain(t *testing.T) {
	if bins := os.Getenv(secretBinsEnv); os.Getenv(secretChildEnv) != "" && bins != "" {
		nerveBin, server, _ := strings.Cut(bins, string(os.PathListSeparator))
		home, err := os.MkdirTemp("", "nr")
		if err != nil {
			t.Fatal(err)
		}
		n := &realNerve{t: t, bin: nerveBin, home: home, Dir: home}
		t.Cleanup(func() {
			n.Dir, n.Env, n.Stdin = home, nil, ""
			n.Run("daemon", "stop")
			os.RemoveAll(home)
		})
		secretE2E(t, n, server, "keychain")
		return
	}
	for _, bin := range []string{"dbus-run-session", "gnome-keyring-daemon", "secret-tool"} {
		if _, err := exec.LookPath(bin); err != nil {
			testutil.RequireE2E(t, "a Secret Service to test secrets in the OS keychain (Debian packages dbus, gnome-keyring, libsecret-tools)", err)
		}
	}
	bins := testutil.BuildBinary(t, "./cmd/nerve") + string(os.PathListSeparator) + testutil.BuildBinary(t, "./fixtures/mcpserver")
	home := t.TempDir()
	cmd := exec.Command("dbus-run-session", "--", "sh", "-c",
		`echo throwaway | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec "$0" -test.run='^TestBinarySecretsKeychain$' -test.v`,
		os.Args[0])
	cmd.Env = append(os.Environ(), secretChildEnv+"=1", secretBinsEnv+"="+bins, "HOME="+home,
		"XDG_DATA_HOME="+filepath.Join(home, "data"), "XDG_RUNTIME_DIR="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestBinarySecretsKeychain") {
		t.Fatalf("in a private D-Bus session with gnome-keyring: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// secretE2E stores a secret with `nerve secret set`, gives it to a stdio
// server's env and an HTTP server's header by ${keychain:NAME}, checks
// both got it through `nerve mcp serve` and a real MCP client, and that
// it is nowhere else: not in any file of the state folder but the store's
// own, not in `node info` or `node ls`, not on the child's command line.
func secretE2E(t *testing.T, n *realNerve, server, mode string) {
	b := make([]byte, 12)
	rand.Read(b)
	secret := "s3cr3t-" + hex.EncodeToString(b)
	n.Env = append(os.Environ(), "NERVE_TOKENS="+mode, "NERVE_LOG_LEVEL=debug")

	// Never from an argument; the refusal does not show it either.
	for _, args := range [][]string{{"TOKEN", secret}, {"TOKEN=" + secret}} {
		_, errOut, code := n.Run(append([]string{"secret", "set"}, args...)...)
		if code != 2 || !strings.Contains(errOut, "never from an argument") || strings.Contains(errOut, secret) {
			t.Errorf("secret set %d args: exit %d, %q", len(args), code, errOut)
		}
	}
	n.Stdin = secret + "\n"
	n.Must("secret", "set", "TOKEN")
	n.Stdin = ""
	if out := n.Must("secret", "ls"); out != "TOKEN\n" {
		t.Errorf("secret ls = %q", out)
	}

	// An MCP server over HTTP, in this process, that reads the header.
	var mu sync.Mutex
	var auth []string
	srv := mcp.NewServer(&mcp.Implementation{Name: "authcheck"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "ping"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		return srv
	}, nil))
	t.Cleanup(func() {
		// Its stream to the node hangs until the node is gone.
		n.Run("node", "rm", "remote")
		ts.CloseClientConnections()
		ts.Close()
	})
	n.Must("node", "add", "mcp", "remote", "--url", ts.URL, "--header", "Authorization: Bearer ${keychain:TOKEN}")
	n.Must("node", "add", "mcp", "ev", "--env", "API_TOKEN=${keychain:TOKEN}", "--", server)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: n.Command("mcp", "serve"), TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{{"remote.ping", map[string]any{}, "pong"}, {"ev.echo", map[string]any{"text": "hi"}, "hi"}} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil || res.IsError || resultText(res) != c.want {
			t.Errorf("call %s through nerve mcp serve = %q, %v", c.tool, resultText(res), err)
		}
	}
	cs.Close()
	mu.Lock()
	if len(auth) == 0 || auth[0] != "Bearer "+secret {
		t.Errorf("the HTTP server got Authorization %q; want the secret", auth)
	}
	mu.Unlock()

	// The stdio server has it in its environment, not on its command line.
	var info struct {
		Info struct {
			Details map[string]any `json:"details"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(n.Must("--json", "node", "info", "ev")), &info); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(int(info.Info.Details["pid"].(float64)))
	environ, err := os.ReadFile("/proc/" + pid + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(environ), "API_TOKEN="+secret+"\x00") {
		t.Errorf("the server's environment has no API_TOKEN with the secret")
	}
	if cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline"); len(cmdline) == 0 || strings.Contains(string(cmdline), secret) {
		t.Errorf("the server's command line %q", cmdline)
	}

	// Nowhere a person or another program reads it.
	shown := map[string]string{}
	for _, args := range [][]string{
		{"node", "info", "ev"}, {"--json", "node", "info", "ev"}, {"node", "info", "remote"}, {"--json", "node", "info", "remote"},
		{"node", "ls"}, {"--json", "node", "ls"}, {"secret", "ls"}, {"--json", "secret", "ls"}, {"log", "-n", "0"}, {"tools"},
	} {
		out, errOut, _ := n.Run(args...)
		shown[strings.Join(args, " ")] = out + errOut
	}
	state, err := os.ReadFile(filepath.Join(n.home, "sessions", "default.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(state), "${keychain:TOKEN}") {
		t.Errorf("the state file does not keep the reference:\n%s", state)
	}
	inStore := false
	filepath.WalkDir(n.home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		data, _ := os.ReadFile(p)
		if !strings.Contains(string(data), secret) {
			return nil
		}
		if mode == "file" && filepath.Base(filepath.Dir(p)) == "tokens" {
			inStore = true // the file fallback is the store itself, 0600
			if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v", p, fi.Mode().Perm())
			}
			return nil
		}
		shown[p] = string(data)
		return nil
	})
	for where, text := range shown {
		if strings.Contains(text, secret) {
			t.Errorf("the secret is in %s", where)
		}
	}
	if mode == "file" && !inStore {
		t.Error("the file fallback holds no secret")
	}
	if mode == "keychain" {
		out, _ := exec.Command("secret-tool", "lookup", "service", "nerve", "username", n.home+"|secret|TOKEN").Output()
		if string(out) != secret {
			t.Errorf("secret-tool finds %q in the Secret Service", out)
		}
	}

	// A secret where a command line would show it is refused at add.
	_, errOut, code := n.Run("node", "add", "mcp", "leaky", "--", server, "--token", "${keychain:TOKEN}")
	if code == 0 || !strings.Contains(errOut, `"args[1]": ${keychain:TOKEN} cannot be used here`) {
		t.Errorf("a secret in args: exit %d, %q", code, errOut)
	}
	// A secret that is not stored: the start says which and how to fix it.
	n.Must("secret", "rm", "TOKEN")
	_, errOut, code = n.Run("node", "restart", "ev")
	if code != 1 || !strings.Contains(errOut, "secret TOKEN is not in nerve's secret store") || !strings.Contains(errOut, "`nerve secret set TOKEN`") {
		t.Errorf("restart without the secret: exit %d, %q", code, errOut)
	}
	if out, errOut := n.Must("secret", "ls"), ""; out != "" {
		t.Errorf("secret ls after rm = %q %q", out, errOut)
	}
}
