package mcpconf

import (
	"slices"
	"strings"
	"testing"
)

var parentEnv = []string{
	"PATH=/usr/bin:/bin",
	"HOME=/home/ana",
	"USER=ana",
	"LOGNAME=ana",
	"LANG=en_GB.UTF-8",
	"LC_ALL=C.UTF-8",
	"LC_TIME=en_DK.UTF-8",
	"TERM=xterm-256color",
	"SHELL=/bin/bash",
	"TMPDIR=/tmp",
	"TZ=Europe/Paris",
	"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI",
	"GITHUB_TOKEN=ghp_secret",
	"OPENAI_API_KEY=sk-secret",
	"SSH_AUTH_SOCK=/tmp/agent",
	"BASH_FUNC_x%%=() { evil; }",
	"NODE_ENV=development",
	"APPDATA=C:\\Users\\ana\\AppData\\Roaming",
}

func names(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		out = append(out, k)
	}
	return out
}

func TestChildEnv(t *testing.T) {
	tests := []struct {
		name    string
		server  Server
		windows bool
		want    []string
	}{
		{
			name:   "safe list only",
			server: Server{},
			want: []string{"PATH=/usr/bin:/bin", "HOME=/home/ana", "USER=ana", "LOGNAME=ana", "LANG=en_GB.UTF-8",
				"LC_ALL=C.UTF-8", "LC_TIME=en_DK.UTF-8", "TERM=xterm-256color", "SHELL=/bin/bash", "TMPDIR=/tmp", "TZ=Europe/Paris"},
		},
		{
			name:   "server env added and wins",
			server: Server{Env: map[string]string{"NODE_ENV": "production", "HOME": "/srv", "GITHUB_TOKEN": "ghp_own"}},
			want: []string{"PATH=/usr/bin:/bin", "USER=ana", "LOGNAME=ana", "LANG=en_GB.UTF-8",
				"LC_ALL=C.UTF-8", "LC_TIME=en_DK.UTF-8", "TERM=xterm-256color", "SHELL=/bin/bash", "TMPDIR=/tmp", "TZ=Europe/Paris",
				"GITHUB_TOKEN=ghp_own", "HOME=/srv", "NODE_ENV=production"},
		},
		{
			name:   "inheritEnv passes everything",
			server: Server{InheritEnv: true, Env: map[string]string{"NODE_ENV": "production"}},
			want: append(slices.DeleteFunc(slices.Clone(parentEnv), func(kv string) bool { return strings.HasPrefix(kv, "NODE_ENV=") }),
				"NODE_ENV=production"),
		},
		{
			name:    "windows adds its own safe names",
			server:  Server{Env: map[string]string{"Path": `C:\bin`}}, // case-insensitive there
			windows: true,
			want: []string{"HOME=/home/ana", "USER=ana", "LOGNAME=ana", "LANG=en_GB.UTF-8",
				"LC_ALL=C.UTF-8", "LC_TIME=en_DK.UTF-8", "TERM=xterm-256color", "SHELL=/bin/bash", "TMPDIR=/tmp", "TZ=Europe/Paris",
				`APPDATA=C:\Users\ana\AppData\Roaming`, `Path=C:\bin`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := childEnv(tt.server, parentEnv, tt.windows)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestChildEnvKeepsSecretsOut(t *testing.T) {
	got := names(ChildEnv(Server{}, parentEnv))
	for _, secret := range []string{"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "OPENAI_API_KEY", "SSH_AUTH_SOCK", "BASH_FUNC_x%%"} {
		if slices.Contains(got, secret) {
			t.Errorf("%s reached the child: %q", secret, got)
		}
	}
	if !slices.Contains(got, "PATH") || !slices.Contains(got, "HOME") {
		t.Errorf("PATH or HOME missing: %q", got)
	}
}

func TestChildEnvDropsShellFunctionsAndDuplicates(t *testing.T) {
	parent := []string{"PATH=/a", "TERM=() { evil; }", "PATH=/b", "=C:=C:\\", "junk"}
	got := childEnv(Server{}, parent, false)
	if want := []string{"PATH=/b"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
