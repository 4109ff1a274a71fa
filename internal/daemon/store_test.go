package daemon

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/pkg/node"
)

func TestSaveSpecs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "default.json")
	specs := []node.Spec{{ID: "a", Kind: "identity", Env: map[string]string{"TOKEN": "${TOKEN}"}}}
	if err := saveSpecs(path, "default", specs); err != nil {
		t.Fatal(err)
	}
	// A second save replaces the first, leaving no temp file behind.
	if err := saveSpecs(path, "default", nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file %v, %v; want mode 0600 (specs may hold tokens)", fi, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries, want only default.json", len(entries))
	}
	got, _, err := loadState(path)
	if err != nil || len(got) != 0 {
		t.Errorf("loadState after saving none = %v, %v", got, err)
	}
	if err := saveSpecs(path, "default", specs); err != nil {
		t.Fatal(err)
	}
	if got, _, err := loadState(path); err != nil || len(got) != 1 || got[0].Env["TOKEN"] != "${TOKEN}" {
		t.Errorf("loadState = %+v, %v; want the spec back, unexpanded", got, err)
	}

	err = saveSpecs(filepath.Join(dir, "missing", "x.json"), "x", specs)
	if err == nil || !strings.HasPrefix(err.Error(), `saving session "x": `) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("saving into a missing folder: %v; want `saving session \"x\": …` wrapping not-exist", err)
	}
}
