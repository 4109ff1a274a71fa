package tokenstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileStore: secrets land in 0600 files of a 0700 folder, named by a
// hash (the key, a server URL, is not in the name); absent is ErrNotFound;
// Delete of an absent key is no error.
func TestFileStore(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, "file")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("oauth|https://h/mcp"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of nothing: %v", err)
	}
	if err := s.Set("oauth|https://h/mcp", []byte(`{"t":1}`)); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Get("oauth|https://h/mcp"); err != nil || string(b) != `{"t":1}` {
		t.Fatalf("Get = %q, %v", b, err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "tokens", "*"))
	if len(files) != 1 || strings.Contains(files[0], "h") && strings.Contains(files[0], "mcp") {
		t.Fatalf("files %v", files)
	}
	if fi, _ := os.Stat(files[0]); fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Join(dir, "tokens")); fi.Mode().Perm() != 0o700 {
		t.Errorf("folder mode %v", fi.Mode().Perm())
	}
	if err := s.Delete("oauth|https://h/mcp"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("oauth|https://h/mcp"); err != nil {
		t.Errorf("Delete of nothing: %v", err)
	}
	if _, err := s.Get("oauth|https://h/mcp"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete: %v", err)
	}
	if _, err := Open(dir, "vault"); err == nil || !strings.Contains(err.Error(), "use keychain, file") {
		t.Errorf("Open with an unknown mode: %v", err)
	}
}
