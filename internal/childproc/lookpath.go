package childproc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Reason says why Start did not start a child.
type Reason int

const (
	// NotFound: the path does not exist, or the name is on no folder of PATH.
	NotFound Reason = iota + 1
	// IsDir: the path names a folder.
	IsDir
	// NotExecutable: the file lacks execute permission (Path names it).
	NotExecutable
	// BadDir: the working folder does not exist or is not a folder.
	BadDir
	// StartFailed: the system refused to start the program (Err says why).
	StartFailed
)

// Error is why Start did not start a child. Its message is a sensible
// default; a node kind may word its own from the fields.
type Error struct {
	Reason  Reason
	Name    string // argv[0] as given
	Path    string // the program found (StartFailed) or refused (IsDir, NotExecutable)
	PathEnv string // the PATH searched, when Name has no slash
	Dir     string // the working folder (BadDir)
	Err     error  // StartFailed: the system's error
}

func (e *Error) Error() string {
	switch e.Reason {
	case NotFound:
		if e.Searched() {
			return fmt.Sprintf("command %q not found on PATH: is it installed, and is its folder on PATH? (try `which %s`; PATH=%s)", e.Name, e.Name, e.PathEnv)
		}
		return fmt.Sprintf("command %q not found: check the path (is it installed there?)", e.Name)
	case IsDir:
		return fmt.Sprintf("command %q is a folder, not a program: give the program's path", e.Name)
	case NotExecutable:
		if e.Searched() {
			return fmt.Sprintf("command %q (%s) cannot be run: permission denied (make it executable: chmod +x %s)", e.Name, e.Path, e.Path)
		}
		return fmt.Sprintf("command %q cannot be run: permission denied (make it executable: chmod +x %s)", e.Name, e.Path)
	case BadDir:
		return fmt.Sprintf("working folder %q does not exist or is not a folder: fix the node's cwd", e.Dir)
	}
	switch {
	case errors.Is(e.Err, fs.ErrPermission):
		return fmt.Sprintf("command %q (%s) cannot be run: permission denied (check its mode and the folder's: chmod +x %s)", e.Name, e.Path, e.Path)
	case errors.Is(e.Err, fs.ErrNotExist):
		return fmt.Sprintf("command %q (%s) cannot be started: %v (is its interpreter, the #! line, installed?)", e.Name, e.Path, e.Err)
	case errors.Is(e.Err, syscall.ENOEXEC):
		return fmt.Sprintf("command %q (%s) is not a program this system can run: %v", e.Name, e.Path, e.Err)
	}
	return fmt.Sprintf("starting %q: %v", e.Name, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Searched reports whether Name was looked up on PATH (it has no slash).
func (e *Error) Searched() bool { return !strings.Contains(e.Name, "/") }

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
