package clientconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnstable(t *testing.T) {
	tmp := t.TempDir()
	home, _ := os.UserHomeDir()
	cache, _ := os.UserCacheDir()
	env := map[string]string{"GOCACHE": filepath.Join(tmp, "gocache"), "TMPDIR": filepath.Join(tmp, "t")}
	getenv := func(k string) string { return env[k] }
	for _, tt := range []struct {
		path, want string
	}{
		{filepath.Join(home, "go", "bin", "nerve"), ""},
		{"/usr/local/bin/nerve", ""},
		{filepath.Join(tmp, "gocache", "3f", "3f0a-d", "nerve"), "build cache"},
		{filepath.Join(cache, "go-build", "3f", "3f0a-d", "nerve"), "build cache"},
		{"/somewhere/go-build2718281828/b001/exe/nerve", "the build of a `go run`"},
		{"/somewhere/go-build/3f/3f0a-d/nerve", "build cache"},
		{filepath.Join(tmp, "t", "nerve"), "temp folder"},
		{filepath.Join(os.TempDir(), "x", "nerve"), "temp folder"},
	} {
		got := Unstable(tt.path, getenv)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("Unstable(%s) = %q; want %q", tt.path, got, tt.want)
		}
	}
	// A link in a stable place to a file in a temp folder is not stable.
	target := filepath.Join(tmp, "t", "nerve")
	os.MkdirAll(filepath.Dir(target), 0o700)
	os.WriteFile(target, nil, 0o700)
	stable := filepath.Join(home, ".nerve-test-link-"+filepath.Base(tmp))
	if err := os.Symlink(target, stable); err == nil {
		defer os.Remove(stable)
		if got := Unstable(stable, getenv); !strings.Contains(got, "temp folder") {
			t.Errorf("a link to a temp file: %q", got)
		}
	}
}
