package mcpconf

import (
	"runtime"
	"strings"
)

// safeEnv are the variables a stdio server gets from nerve's environment
// unless it sets "inheritEnv": enough to find programs (npx, uvx), a home
// folder and a locale, and nothing that usually holds a secret. The list
// follows the TypeScript MCP SDK's getDefaultEnvironment.
var safeEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM", "SHELL", "TMPDIR", "TZ"}

// safeEnvWindows are added on Windows, where programs fail without them.
var safeEnvWindows = []string{
	"USERPROFILE", "APPDATA", "LOCALAPPDATA", "PATHEXT", "SYSTEMROOT", "COMSPEC",
	"TEMP", "TMP", "HOMEDRIVE", "HOMEPATH", "SYSTEMDRIVE", "USERNAME", "PROGRAMFILES",
	"PROCESSOR_ARCHITECTURE",
}

// ChildEnv returns the environment to start s's command with, given
// nerve's own (os.Environ()): the safe list (PATH, HOME, USER, LOGNAME,
// LANG, LC_*, TERM, SHELL, TMPDIR, TZ, and on Windows USERPROFILE, APPDATA,
// LOCALAPPDATA, PATHEXT, SYSTEMROOT, COMSPEC and a few more) — or
// everything when s.InheritEnv — then s.Env, which wins. s should be
// expanded already. Each name appears once; s.Env follows in name order.
func ChildEnv(s Server, parent []string) []string {
	return childEnv(s, parent, runtime.GOOS == "windows")
}

func childEnv(s Server, parent []string, windows bool) []string {
	norm := func(k string) string {
		if windows { // names are case-insensitive there
			return strings.ToUpper(k)
		}
		return k
	}
	safe := func(k string) bool {
		if strings.HasPrefix(k, "LC_") {
			return true
		}
		for _, n := range safeEnv {
			if k == n {
				return true
			}
		}
		if windows {
			for _, n := range safeEnvWindows {
				if k == n {
					return true
				}
			}
		}
		return false
	}
	own := make(map[string]bool, len(s.Env))
	for k := range s.Env {
		own[norm(k)] = true
	}
	out := make([]string, 0, len(s.Env)+16)
	at := map[string]int{} // name → index in out, so the last duplicate wins
	for _, kv := range parent {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		nk := norm(k)
		if own[nk] {
			continue
		}
		// Values starting with "()" are exported bash functions, a
		// known injection path (Shellshock); the TypeScript SDK drops them too.
		if !s.InheritEnv && (k == "" || !safe(nk) || strings.HasPrefix(v, "()")) {
			continue
		}
		if i, dup := at[nk]; dup && k != "" {
			out[i] = kv
			continue
		}
		at[nk] = len(out)
		out = append(out, kv)
	}
	for _, k := range sortedKeys(s.Env) {
		out = append(out, k+"="+s.Env[k])
	}
	return out
}
