package tokenstore

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// keychainChildEnv marks the test binary that TestKeychainStore runs
// inside a private D-Bus session with a Secret Service of its own.
const keychainChildEnv = "NERVE_TEST_KEYCHAIN_CHILD"

// TestKeychainStore stores, reads and deletes a sign-in through a real
// Secret Service (gnome-keyring, as on a Linux desktop), and reads it back
// with libsecret's secret-tool, a reader nerve did not write. It never
// touches the keychain of whoever runs it: the test binary runs again
// inside dbus-run-session, on a session bus of its own, with a new
// keyring unlocked under a throwaway HOME.
func TestKeychainStore(t *testing.T) {
	if os.Getenv(keychainChildEnv) != "" {
		keychainChecks(t)
		return
	}
	for _, bin := range []string{"dbus-run-session", "gnome-keyring-daemon", "secret-tool"} {
		if _, err := exec.LookPath(bin); err != nil {
			testutil.RequireE2E(t, "a Secret Service to test the OS keychain (Debian packages dbus, gnome-keyring, libsecret-tools)", err)
		}
	}
	home := t.TempDir()
	// gnome-keyring-daemon --unlock reads the new keyring's password on
	// stdin, creates it and serves org.freedesktop.secrets on this bus.
	cmd := exec.Command("dbus-run-session", "--", "sh", "-c",
		`echo throwaway | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec "$0" -test.run='^TestKeychainStore$' -test.v`,
		os.Args[0])
	cmd.Env = append(os.Environ(), keychainChildEnv+"=1", "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, "data"),
		"XDG_RUNTIME_DIR="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestKeychainStore") {
		t.Fatalf("in a private D-Bus session with gnome-keyring: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// keychainChecks runs where a Secret Service answers.
func keychainChecks(t *testing.T) {
	state := t.TempDir()
	s, err := Open(state, "keychain")
	if err != nil {
		t.Fatalf("NERVE_TOKENS=keychain with a Secret Service: %v", err)
	}
	if !strings.Contains(s.Where(), "OS keychain") {
		t.Errorf("Where = %q, want the OS keychain", s.Where())
	}
	const key, secret = "oauth|https://h/mcp", `{"token":{"access_token":"a"}}`
	if _, err := s.Get(key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of nothing: %v; want ErrNotFound", err)
	}
	if err := s.Set(key, []byte(secret)); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Get(key); err != nil || string(b) != secret {
		t.Fatalf("Get = %q, %v; want what was set", b, err)
	}
	// In the Secret Service, as libsecret sees it; not in a file.
	if got := secretTool(t, state+"|"+key); got != secret {
		t.Errorf("secret-tool lookup = %q, want %q", got, secret)
	}
	if files, _ := filepath.Glob(filepath.Join(state, "tokens", "*")); len(files) != 0 {
		t.Errorf("files %v; the keychain store wrote to the state folder", files)
	}
	// With no NERVE_TOKENS, the keychain answers, so it is used.
	auto, err := Open(state, "")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := auto.Get(key); err != nil || string(b) != secret || !strings.Contains(auto.Where(), "OS keychain") {
		t.Errorf("auto store: Get = %q, %v, Where %q; want the keychain's secret", b, err, auto.Where())
	}
	// Another state folder (NERVE_HOME) keeps its own sign-ins.
	other, _ := Open(t.TempDir(), "keychain")
	if _, err := other.Get(key); !errors.Is(err, ErrNotFound) {
		t.Errorf("another state folder's store: %v; want ErrNotFound", err)
	}
	if err := s.Delete(key); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(key); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete: %v; want ErrNotFound", err)
	}
	if got := secretTool(t, state+"|"+key); got != "" {
		t.Errorf("secret-tool still finds %q after Delete", got)
	}
	if err := s.Delete(key); err != nil {
		t.Errorf("Delete of nothing: %v", err)
	}
	// `nerve secret` values: in the keychain, as libsecret sees them;
	// nothing in a file but their names.
	secretsChecks(t, NewSecrets(s, state), state)
	if got := secretTool(t, state+"|secret|B"); got != "b-value" {
		t.Errorf("secret-tool lookup of secret B = %q", got)
	}
	if files, _ := filepath.Glob(filepath.Join(state, "tokens", "*")); len(files) != 0 {
		t.Errorf("files %v; the keychain's secrets went to the state folder", files)
	}
}

// secretTool returns what libsecret's secret-tool finds for nerve's item
// user (go-keyring's attributes: service, username), "" for nothing.
func secretTool(t *testing.T, user string) string {
	t.Helper()
	out, err := exec.Command("secret-tool", "lookup", "service", keyringService, "username", user).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(out) == 0 {
		return "" // not found
	}
	if err != nil {
		t.Fatalf("secret-tool: %v", err)
	}
	return string(out)
}

// TestKeychainAbsent: with no Secret Service, NERVE_TOKENS=keychain is
// refused with what to do, and the default keeps sign-ins in files.
func TestKeychainAbsent(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "no-bus"))
	state := t.TempDir()
	if _, err := Open(state, "keychain"); err == nil || !strings.Contains(err.Error(), "NERVE_TOKENS=keychain, but the OS keychain cannot be used") ||
		!strings.Contains(err.Error(), "unset NERVE_TOKENS to keep sign-ins in files instead") {
		t.Errorf("Open(keychain) without a Secret Service: %v", err)
	}
	s, err := Open(state, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Get("k"); err != nil || string(b) != "v" || !strings.Contains(s.Where(), "files in") {
		t.Errorf("Get = %q, %v, Where %q; want the secret, from files", b, err, s.Where())
	}
	if files, _ := filepath.Glob(filepath.Join(state, "tokens", "*")); len(files) != 1 {
		t.Errorf("files %v, want the one sign-in", files)
	}
}
