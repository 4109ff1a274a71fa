//go:build windows

package childproc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// whichCmd is the command that shows where a name is found on PATH.
const whichCmd = "where"

// hasDir reports whether name is a path rather than a name to search for:
// it has a slash, a backslash or a drive ("C:prog").
func hasDir(name string) bool { return strings.ContainsAny(name, `/\:`) }

// defaultPathExt is PATHEXT when neither the child's environment nor
// nerve's sets it: Windows' own list, less the kinds CreateProcess cannot
// start.
const defaultPathExt = ".COM;.EXE;.BAT;.CMD"

// LookPath finds file as Windows does, in the PATH of the child's
// environment env (nerve's own PATH when it has none; names are
// case-insensitive, so Path= counts, and the last entry wins): a name
// without an extension is tried with each of PATHEXT's (the child's, else
// nerve's, else .COM;.EXE;.BAT;.CMD), so npx is npx.cmd; a name with one
// is tried as it is first. The current folder is not searched, unlike
// cmd.exe, for the reason Go's exec.LookPath gives (go.dev/issue/43947):
// a program in whatever folder the daemon runs from would win over PATH.
// Windows has no execute bit: a file is runnable when CreateProcess can
// start it (.exe, .com) or cmd.exe can (.bat, .cmd, see commandLine); one
// found with another extension of PATHEXT (.js, .vbs: run by their file
// association, which nerve does not follow) is skipped, and reported (the
// last such) only when none is runnable. Errors are *Error.
func LookPath(file string, env []string) (string, error) {
	exts := pathExts(env)
	if hasDir(file) {
		if st, err := os.Stat(file); err == nil && st.IsDir() {
			return "", &Error{Reason: IsDir, Name: file, Path: file}
		}
		p, denied := findRunnable(file, exts)
		switch {
		case p != "":
			return p, nil
		case denied != "":
			return "", &Error{Reason: NotExecutable, Name: file, Path: denied}
		}
		return "", &Error{Reason: NotFound, Name: file, Path: file}
	}
	pathEnv, ok := envValue(env, "PATH")
	if !ok {
		pathEnv = os.Getenv("PATH")
	}
	denied := ""
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			continue // as Go's exec.LookPath and PowerShell: not "."
		}
		p, d := findRunnable(filepath.Join(dir, file), exts)
		if p == "" {
			if d != "" {
				denied = d
			}
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		return p, nil
	}
	if denied != "" {
		return "", &Error{Reason: NotExecutable, Name: file, Path: denied, PathEnv: pathEnv}
	}
	return "", &Error{Reason: NotFound, Name: file, PathEnv: pathEnv}
}

// findRunnable tries file as it is when it has an extension, then file
// with each of exts, and returns the first that is a runnable file; denied
// is the first that exists but is not runnable.
func findRunnable(file string, exts []string) (path, denied string) {
	try := func(f string) bool {
		st, err := os.Stat(f)
		if err != nil || st.IsDir() {
			return false
		}
		if !runnable(f) {
			if denied == "" {
				denied = f
			}
			return false
		}
		path = f
		return true
	}
	if filepath.Ext(file) != "" && try(file) {
		return path, ""
	}
	for _, e := range exts {
		if try(file + e) {
			return path, ""
		}
	}
	return "", denied
}

// runnable reports whether nerve can start the file: a program, or a
// batch file run through cmd.exe.
func runnable(file string) bool {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".exe", ".com", ".bat", ".cmd":
		return true
	}
	return false
}

// isBatch reports whether path is a batch file, which only cmd.exe runs.
func isBatch(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".bat", ".cmd":
		return true
	}
	return false
}

// pathExts returns PATHEXT's extensions, lower case with their dot: the
// child's, else nerve's, else defaultPathExt.
func pathExts(env []string) []string {
	v, ok := envValue(env, "PATHEXT")
	if !ok || v == "" {
		v = os.Getenv("PATHEXT")
	}
	if v == "" {
		v = defaultPathExt
	}
	var exts []string
	for _, e := range strings.Split(strings.ToLower(v), ";") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		if e[0] != '.' {
			e = "." + e
		}
		exts = append(exts, e)
	}
	return exts
}

// envValue returns the value of the last entry of env named name, which
// Windows compares without case (Path and PATH are one variable).
func envValue(env []string, name string) (string, bool) {
	v, ok := "", false
	for _, kv := range env {
		k, val, found := strings.Cut(kv, "=")
		if found && k != "" && strings.EqualFold(k, name) {
			v, ok = val, true
		}
	}
	return v, ok
}

// notRunnable words NotExecutable for Windows, where it means a file
// whose extension neither CreateProcess nor cmd.exe runs.
func notRunnable(e *Error) string {
	return fmt.Sprintf("command %q (%s) is not a program Windows starts: only .exe, .com, .bat and .cmd files run without a file association; run it with its interpreter (e.g. node %s)", e.Name, e.Path, e.Path)
}
