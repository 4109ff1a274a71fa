//go:build unix

package childproc

import (
	"os"
	"path/filepath"
	"strings"
)

// whichCmd is the command that shows where a name is found on PATH.
const whichCmd = "which"

// hasDir reports whether name is a path rather than a name to search for.
func hasDir(name string) bool { return strings.Contains(name, "/") }

// notRunnable: a file without execute permission has the default message.
func notRunnable(*Error) string { return "" }

// commandLine: a Unix program is run as it is, with argv.
func commandLine(path string, argv []string) (exe, line string, err error) { return path, "", nil }

// LookPath finds file like exec.LookPath, but in the PATH of the child's
// environment env (its last PATH= entry; nerve's own PATH when it has
// none), which a config may set. A file on PATH without execute permission
// is skipped, and reported (the last such) only when none is executable. Errors are *Error.
func LookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		st, err := os.Stat(file)
		switch {
		case err != nil:
			return "", &Error{Reason: NotFound, Name: file, Path: file}
		case st.IsDir():
			return "", &Error{Reason: IsDir, Name: file, Path: file}
		case st.Mode()&0o111 == 0:
			return "", &Error{Reason: NotExecutable, Name: file, Path: file}
		}
		return file, nil
	}
	pathEnv, ok := "", false
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			pathEnv, ok = v, true
		}
	}
	if !ok {
		pathEnv = os.Getenv("PATH")
	}
	denied := ""
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		st, err := os.Stat(p)
		if err != nil || st.IsDir() {
			continue
		}
		if st.Mode()&0o111 == 0 {
			denied = p
			continue
		}
		if !filepath.IsAbs(p) {
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
		}
		return p, nil
	}
	if denied != "" {
		return "", &Error{Reason: NotExecutable, Name: file, Path: denied, PathEnv: pathEnv}
	}
	return "", &Error{Reason: NotFound, Name: file, PathEnv: pathEnv}
}
