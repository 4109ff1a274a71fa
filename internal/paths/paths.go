// Package paths says where nerve keeps its files: the state folder (saved
// sessions, logs, the call log, REPL history, the contexts of `nerve
// context`) and the runtime folder (the daemon's socket and lock).
// NERVE_HOME puts everything under one folder; tests use it. Only
// commands and the daemon import it.
package paths

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
)

// Paths are the files and folders of one user's nerve.
type Paths struct {
	// State holds sessions/, the log file, the call log and history.
	State string
	// Runtime holds the socket and the lock file; it is created 0700.
	Runtime string
	// Socket is the daemon's Unix socket.
	Socket string
	// Lock is held by the running daemon for its whole life.
	Lock string
	// Log is the daemon's (and the CLI's) zap log file.
	Log string
	// CallLog is the JSON-lines log of every call.
	CallLog string
	// History is the REPL's line history.
	History string
	// Sessions holds <name>.json (saved specs) and <name>/ (node folders).
	Sessions string
	// Contexts names the daemons of other machines (`nerve context`) and
	// the one commands use.
	Contexts string
}

// maxSocketPath is the longest Unix socket path that works everywhere
// (sun_path is 104 bytes on macOS, 108 on Linux, with a terminating NUL).
const maxSocketPath = 103

// FromEnv returns the paths from the environment read through getenv:
// NERVE_HOME overrides everything; otherwise XDG_STATE_HOME/nerve (or
// ~/.local/state/nerve, %LOCALAPPDATA%\nerve on Windows) and
// XDG_RUNTIME_DIR/nerve (or /tmp/nerve-$UID, the state folder's run on
// Windows).
func FromEnv(getenv func(string) string) (Paths, error) {
	if home := getenv("NERVE_HOME"); home != "" {
		abs, err := filepath.Abs(home)
		if err != nil {
			return Paths{}, fmt.Errorf("NERVE_HOME %q: %w", home, err)
		}
		return Under(abs, filepath.Join(abs, "run")), nil
	}
	state, err := stateDir(getenv)
	if err != nil {
		return Paths{}, err
	}
	return Under(state, runtimeDir(getenv, state)), nil
}

// Under returns the paths for a state folder and a runtime folder.
func Under(state, run string) Paths {
	return Paths{
		State:    state,
		Runtime:  run,
		Socket:   filepath.Join(run, "nerve.sock"),
		Lock:     filepath.Join(run, "nerve.lock"),
		Log:      filepath.Join(state, "nerve.log"),
		CallLog:  filepath.Join(state, "calls.jsonl"),
		History:  filepath.Join(state, "history"),
		Sessions: filepath.Join(state, "sessions"),
		Contexts: filepath.Join(state, "contexts.json"),
	}
}

func stateDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "nerve"), nil
	}
	if runtime.GOOS == "windows" {
		if d := getenv("LOCALAPPDATA"); d != "" {
			return filepath.Join(d, "nerve"), nil
		}
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", errors.New("cannot find a folder for nerve's state: set HOME, XDG_STATE_HOME or NERVE_HOME")
		}
		home = h
	}
	return filepath.Join(home, ".local", "state", "nerve"), nil
}

func runtimeDir(getenv func(string) string, state string) string {
	if d := getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "nerve")
	}
	if runtime.GOOS == "windows" {
		// Windows has no uid to name a folder in %TEMP% by (os.Getuid is
		// -1), and Disk Cleanup empties %TEMP%: the state folder, in
		// %LOCALAPPDATA%, which only the user may open, holds the socket
		// and the lock, as under NERVE_HOME.
		return filepath.Join(state, "run")
	}
	return filepath.Join(os.TempDir(), "nerve-"+strconv.Itoa(os.Getuid()))
}

// Ensure creates the state folder and the runtime folder (0700). It refuses
// a runtime folder that another user owns or that others can enter: the
// socket's safety rests on it.
func (p Paths) Ensure() error {
	if err := os.MkdirAll(p.State, 0o700); err != nil {
		return fmt.Errorf("creating the state folder: %w", err)
	}
	if err := os.MkdirAll(p.Sessions, 0o700); err != nil {
		return fmt.Errorf("creating the sessions folder: %w", err)
	}
	if err := os.MkdirAll(p.Runtime, 0o700); err != nil {
		return fmt.Errorf("creating the runtime folder: %w", err)
	}
	if err := checkPrivate(p.Runtime); err != nil {
		return err
	}
	if len(p.Socket) > maxSocketPath {
		return fmt.Errorf("socket path %q is %d bytes, longer than the %d a Unix socket allows: set NERVE_HOME or XDG_RUNTIME_DIR to a shorter folder", p.Socket, len(p.Socket), maxSocketPath)
	}
	return nil
}
