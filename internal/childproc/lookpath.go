package childproc

import (
	"errors"
	"fmt"
	"io/fs"
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
	// UnsafeArg: an argument cannot reach a Windows batch file (.cmd,
	// .bat) unchanged through cmd.exe (Arg names it, Char the character).
	UnsafeArg
)

// Error is why Start did not start a child. Its message is a sensible
// default; a node kind may word its own from the fields.
type Error struct {
	Reason  Reason
	Name    string // argv[0] as given
	Path    string // the program found (StartFailed) or refused (IsDir, NotExecutable)
	PathEnv string // the PATH searched, when Name has no slash
	Dir     string // the working folder (BadDir)
	Arg     string // the argument refused (UnsafeArg)
	Char    string // what in Arg cmd.exe would read as its own (UnsafeArg)
	Err     error  // StartFailed: the system's error
}

func (e *Error) Error() string {
	switch e.Reason {
	case NotFound:
		if e.Searched() {
			return fmt.Sprintf("command %q not found on PATH: is it installed, and is its folder on PATH? (try `%s %s`; PATH=%s)", e.Name, whichCmd, e.Name, e.PathEnv)
		}
		return fmt.Sprintf("command %q not found: check the path (is it installed there?)", e.Name)
	case IsDir:
		return fmt.Sprintf("command %q is a folder, not a program: give the program's path", e.Name)
	case NotExecutable:
		if msg := notRunnable(e); msg != "" {
			return msg
		}
		if e.Searched() {
			return fmt.Sprintf("command %q (%s) cannot be run: permission denied (make it executable: chmod +x %s)", e.Name, e.Path, e.Path)
		}
		return fmt.Sprintf("command %q cannot be run: permission denied (make it executable: chmod +x %s)", e.Name, e.Path)
	case BadDir:
		return fmt.Sprintf("working folder %q does not exist or is not a folder: fix the node's cwd", e.Dir)
	case UnsafeArg:
		return fmt.Sprintf("argument %q cannot be passed to %s safely: it is a batch file, which Windows runs through cmd.exe, and cmd.exe would read the %q in it as its own syntax; remove it, or run the program the batch file starts directly (e.g. node with its script instead of npx.cmd)", e.Arg, e.Path, e.Char)
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

// Searched reports whether Name was looked up on PATH (it names no
// folder: no slash, nor on Windows a backslash or drive).
func (e *Error) Searched() bool { return !hasDir(e.Name) }
