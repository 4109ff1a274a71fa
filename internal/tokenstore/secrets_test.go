package tokenstore

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSecrets: a secret is kept in the store (files here), its name —
// never its value — in the names file; absent is ErrNoSecret; a name
// ${keychain:NAME} cannot name is refused.
func TestSecrets(t *testing.T) {
	state := t.TempDir()
	store, err := Open(state, "file")
	if err != nil {
		t.Fatal(err)
	}
	secretsChecks(t, NewSecrets(store, state), state)
	// The value is in the store's 0600 file, as sign-ins are.
	files, _ := filepath.Glob(filepath.Join(state, "tokens", "*"))
	if len(files) != 1 {
		t.Fatalf("token files %v; want the one secret", files)
	}
	if fi, _ := os.Stat(files[0]); fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v", fi.Mode().Perm())
	}
}

// secretsChecks runs against any store; it leaves secret B stored with
// value "b-value".
func secretsChecks(t *testing.T, s *Secrets, state string) {
	t.Helper()
	if _, err := s.Get("A"); !errors.Is(err, ErrNoSecret) {
		t.Fatalf("Get of nothing: %v; want ErrNoSecret", err)
	}
	for _, n := range []string{"B", "A_1"} {
		if err := s.Set(n, strings.ToLower(n)+"-value"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Set("B", "b-value"); err != nil { // again: listed once
		t.Fatal(err)
	}
	if v, err := s.Get("A_1"); err != nil || v != "a_1-value" {
		t.Errorf("Get = %q, %v", v, err)
	}
	if names, err := s.Names(); err != nil || !slices.Equal(names, []string{"A_1", "B"}) {
		t.Errorf("Names = %v, %v", names, err)
	}
	index, err := os.ReadFile(filepath.Join(state, "secrets"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(index), "-value") {
		t.Errorf("the names file holds a value:\n%s", index)
	}
	if fi, _ := os.Stat(filepath.Join(state, "secrets")); fi.Mode().Perm() != 0o600 {
		t.Errorf("names file mode %v", fi.Mode().Perm())
	}
	if found, err := s.Delete("A_1"); err != nil || !found {
		t.Errorf("Delete = %v, %v", found, err)
	}
	if found, err := s.Delete("A_1"); err != nil || found {
		t.Errorf("Delete of nothing = %v, %v", found, err)
	}
	if _, err := s.Get("A_1"); !errors.Is(err, ErrNoSecret) {
		t.Errorf("Get after Delete: %v", err)
	}
	for _, bad := range []string{"", "1A", "A-B", "A B", "A=b"} {
		if err := s.Set(bad, "v"); err == nil {
			t.Errorf("Set(%q) took it", bad)
		}
	}
}
