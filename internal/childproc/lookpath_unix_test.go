//go:build unix

package childproc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	prog := write("prog", "#!/bin/sh\n", 0o755)
	plain := write("plain", "#!/bin/sh\n", 0o644)
	noInterp := write("nointerp", "#!/nonexistent/interpreter\n", 0o755)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	// Only on the child's PATH, and a denied one there.
	onPath := t.TempDir()
	os.WriteFile(filepath.Join(onPath, "nerve-only-here"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(onPath, "nerve-denied"), []byte("#!/bin/sh\n"), 0o644)
	env := []string{"PATH=/nonexistent", "PATH=" + onPath}

	tests := []struct {
		name   string
		argv   []string
		dir    string
		reason Reason
		want   string // in the message
	}{
		{"missing path", []string{"/nonexistent/prog"}, "", NotFound, `command "/nonexistent/prog" not found: check the path`},
		{"folder", []string{sub}, "", IsDir, "is a folder, not a program"},
		{"not executable", []string{plain}, "", NotExecutable, "chmod +x " + plain},
		{"not on the child's PATH", []string{"sh"}, "", NotFound, "not found on PATH: is it installed, and is its folder on PATH? (try `which sh`; PATH=" + onPath + ")"},
		{"denied on PATH", []string{"nerve-denied"}, "", NotExecutable, filepath.Join(onPath, "nerve-denied") + ") cannot be run: permission denied"},
		{"bad working folder", []string{prog}, filepath.Join(dir, "nope"), BadDir, "working folder"},
		{"working folder is a file", []string{prog}, plain, BadDir, "fix the node's cwd"},
		{"missing interpreter", []string{noInterp}, "", StartFailed, "is its interpreter, the #! line, installed?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(tt.argv, env, tt.dir, nil)
			if err == nil {
				p.Stop(t.Context())
				t.Fatal("Start succeeded")
			}
			var e *Error
			if !errors.As(err, &e) || e.Reason != tt.reason || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v (%#v), want reason %d and %q", err, e, tt.reason, tt.want)
			}
		})
	}

	got, err := LookPath("nerve-only-here", env)
	if want := filepath.Join(onPath, "nerve-only-here"); err != nil || got != want {
		t.Errorf("LookPath on the child's PATH = %q, %v; want %q (the last PATH= wins)", got, err, want)
	}
}
