package paths

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

func TestFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	home := filepath.Join(os.TempDir(), "home")
	type want struct {
		name       string
		env        map[string]string
		state, run string
	}
	tests := []want{
		{"NERVE_HOME", map[string]string{"NERVE_HOME": home, "XDG_RUNTIME_DIR": filepath.Join(home, "xdg")}, home, filepath.Join(home, "run")},
		{"XDG", map[string]string{"XDG_STATE_HOME": filepath.Join(home, "st"), "XDG_RUNTIME_DIR": filepath.Join(home, "rt")}, filepath.Join(home, "st", "nerve"), filepath.Join(home, "rt", "nerve")},
	}
	if runtime.GOOS == "windows" {
		// Not %TEMP%\nerve--1 (os.Getuid is -1 there).
		local := filepath.Join(home, "AppData", "Local")
		tests = append(tests, want{"LOCALAPPDATA", map[string]string{"LOCALAPPDATA": local}, filepath.Join(local, "nerve"), filepath.Join(local, "nerve", "run")})
	} else {
		tests = append(tests, want{"HOME", map[string]string{"HOME": home}, filepath.Join(home, ".local", "state", "nerve"), filepath.Join(os.TempDir(), "nerve-"+strconv.Itoa(os.Getuid()))})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := FromEnv(env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if p.State != tt.state || p.Runtime != tt.run || p.Socket != filepath.Join(tt.run, "nerve.sock") || p.Lock != filepath.Join(tt.run, "nerve.lock") {
				t.Errorf("state %q, runtime %q, socket %q; want %q and %q", p.State, p.Runtime, p.Socket, tt.state, tt.run)
			}
		})
	}
}
