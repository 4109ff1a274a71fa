package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	for _, content := range []string{"one", "two, longer than one"} {
		if err := Write(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries, want only the file (no temporaries)", len(entries))
	}
}

func TestWriteIntoMissingFolderFails(t *testing.T) {
	err := Write(filepath.Join(t.TempDir(), "no", "such", "f"), []byte("x"), 0o600)
	if err == nil {
		t.Fatal("Write into a missing folder succeeded")
	}
}

func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{ // path → removed
		filepath.Join(dir, ".state.json.tmp-1"):  true,
		filepath.Join(sub, ".run.json.tmp-2"):    true,
		filepath.Join(dir, "state.json"):         false,
		filepath.Join(dir, ".hidden"):            false,
		filepath.Join(sub, "notes.tmp-3"):        false,
		filepath.Join(sub, "state.json.corrupt"): false,
	}
	for p := range files {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n, err := RemoveStale(dir)
	if err != nil || n != 2 {
		t.Errorf("RemoveStale = %d, %v; want 2, nil", n, err)
	}
	for p, removed := range files {
		if _, err := os.Stat(p); os.IsNotExist(err) != removed {
			t.Errorf("%s: removed=%v, want %v", p, os.IsNotExist(err), removed)
		}
	}
	if n, err := RemoveStale(filepath.Join(dir, "missing")); n != 0 || err != nil {
		t.Errorf("RemoveStale of a missing folder = %d, %v", n, err)
	}
}
