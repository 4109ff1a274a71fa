// Package gosdkfix builds the Go SDK's conformance peers — its
// everything-server and everything-client — from the module cache, never
// copied into this repository, for tests that need a real peer nerve did
// not write. Tests call it; nothing else may import it.
package gosdkfix

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// sdkDir is the Go SDK nerve's go.mod names, in the module cache.
func sdkDir(t testing.TB) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/modelcontextprotocol/go-sdk")
	cmd.Dir = testutil.RepoRoot(t)
	out, err := cmd.Output()
	dir := strings.TrimSpace(string(out))
	if err == nil && dir == "" {
		err = fmt.Errorf("go list gave no folder")
	}
	if err != nil {
		testutil.RequireE2E(t, "the Go SDK in the module cache", err)
	}
	return dir
}

type built struct {
	once sync.Once
	path string
	err  error
}

var (
	buildsMu sync.Mutex
	builds   = map[string]*built{}
)

// build builds pkg of the SDK once per test process, into a folder of its
// own. With src, the package is built from that text of its main.go
// instead, as a package of nerve's module (a build overlay adds it there;
// files of the module cache cannot be replaced), with the SDK's version
// nerve's go.mod names.
func build(t testing.TB, key, pkg, src string) string {
	t.Helper()
	dir := sdkDir(t)
	buildsMu.Lock()
	b, ok := builds[key]
	if !ok {
		b = &built{}
		builds[key] = b
	}
	buildsMu.Unlock()
	b.once.Do(func() {
		// Named as testutil names its folders of binaries, which a later
		// test process removes once this one has ended.
		out, err := os.MkdirTemp("", fmt.Sprintf("nerve-testbin-%d-gosdk-", os.Getpid()))
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(out, filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-o", b.path, pkg)
		cmd.Dir = dir
		if src != "" {
			root := testutil.RepoRoot(t)
			virtual := filepath.Join(root, "internal", "testutil", "gosdkfix", "patched", filepath.Base(pkg), "main.go")
			real := filepath.Join(out, "main.go")
			js, _ := json.Marshal(map[string]any{"Replace": map[string]string{virtual: real}})
			overlay := filepath.Join(out, "overlay.json")
			if b.err = os.WriteFile(real, []byte(src), 0o600); b.err != nil {
				return
			}
			if b.err = os.WriteFile(overlay, js, 0o600); b.err != nil {
				return
			}
			cmd = exec.Command("go", "build", "-overlay", overlay, "-o", b.path, "./"+filepath.ToSlash(filepath.Dir(mustRel(root, virtual))))
			cmd.Dir = root
			// In nerve's module: never let the build touch go.mod.
			cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off")
		} else {
			// The module cache is read-only and offline: build with what
			// it holds.
			cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
		}
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
		}
	})
	if b.err != nil {
		testutil.RequireE2E(t, "the Go SDK's "+pkg, b.err)
	}
	return b.path
}

func mustRel(base, p string) string {
	r, err := filepath.Rel(base, p)
	if err != nil {
		panic(err)
	}
	return r
}

// EverythingClient builds the SDK's conformance everything-client, the
// reference each client result is compared with.
func EverythingClient(t testing.TB) string {
	t.Helper()
	return build(t, "client", "./conformance/everything-client", "")
}

// EverythingServer builds the SDK's conformance everything-server. With
// versions, it serves only those protocol versions: its source, read from
// the module cache, gets one option more (ServerOptions.
// SupportedProtocolVersions) and is built as described at build. Run it with
// -http ADDR for streamable HTTP (stateless unless -stateless=false),
// else it speaks stdio.
func EverythingServer(t testing.TB, versions ...string) string {
	t.Helper()
	if len(versions) == 0 {
		return build(t, "server", "./conformance/everything-server", "")
	}
	const file = "conformance/everything-server/main.go"
	src, err := os.ReadFile(filepath.Join(sdkDir(t), file))
	if err != nil {
		t.Fatal(err)
	}
	const anchor = "opts := &mcp.ServerOptions{"
	if !bytes.Contains(src, []byte(anchor)) {
		t.Fatalf("%s no longer holds %q: update gosdkfix for this version of the SDK", file, anchor)
	}
	vs, _ := json.Marshal(versions)
	patched := strings.Replace(string(src), anchor, anchor+"\n\t\tSupportedProtocolVersions: []string{"+strings.Trim(string(vs), "[]")+"},", 1)
	return build(t, "server "+strings.Join(versions, ","), "./conformance/everything-server", patched)
}
