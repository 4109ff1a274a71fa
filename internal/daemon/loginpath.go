package daemon

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// LoginPathVar, set in the environment of a daemon being started, makes it
// take the login shell's PATH: `nerve mcp serve` sets it, since apps start
// MCP servers with a minimal PATH and nodes would not find node, npx or
// bash.
const LoginPathVar = "NERVE_LOGIN_PATH"

// loginShellWait bounds the login shell's run: a slow profile must not
// hold the daemon's start.
const loginShellWait = 3 * time.Second

// loginPATH returns the login shell's PATH with the folders of inherited
// that it lacks after it — what `$SHELL -lc 'printf %s "$PATH"'` prints, as
// other tools started from GUI apps do. If the shell cannot tell, it is
// inherited with the usual folders added.
func loginPATH(ctx context.Context, inherited string) string {
	if runtime.GOOS == "windows" {
		return inherited
	}
	ctx, cancel := context.WithTimeout(ctx, loginShellWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, loginShell(), "-lc", `printf %s "$PATH"`)
	cmd.Stdin = nil
	out, err := cmd.Output()
	login := strings.TrimSpace(string(out))
	if err != nil || login == "" {
		home, _ := os.UserHomeDir()
		login = strings.Join([]string{"/opt/homebrew/bin", "/usr/local/bin", filepath.Join(home, ".local", "bin"), "/usr/bin", "/bin", "/usr/sbin", "/sbin"}, ":")
	}
	return mergePath(login, inherited)
}

// mergePath joins two PATH values, each folder once, first's first.
func mergePath(first, second string) string {
	seen := map[string]bool{}
	var out []string
	for _, d := range append(strings.Split(first, ":"), strings.Split(second, ":")...) {
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, d)
	}
	return strings.Join(out, ":")
}

// loginShell is $SHELL, else the user's shell in /etc/passwd, else /bin/sh.
func loginShell() string {
	if s := os.Getenv("SHELL"); s != "" {
		return s
	}
	if f, err := os.Open("/etc/passwd"); err == nil {
		defer f.Close()
		uid := strconv.Itoa(os.Getuid())
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Split(sc.Text(), ":")
			if len(fields) >= 7 && fields[2] == uid && fields[6] != "" {
				return fields[6]
			}
		}
	}
	return "/bin/sh"
}
