package daemon

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/nerve-dev/nerve/internal/paths"
)

// Spawn starts `exe daemon start --foreground` detached from the caller:
// a new session (no controlling terminal, no signals from the caller's
// shell), stdin from the null device, stdout and stderr appended to the
// log file. The daemon is the running image of exe: it never executes its
// own path again, so exe may be deleted once the daemon runs (a binary
// built by `go run` is removed when the command that started it exits).
// The caller waits for the socket to answer.
func Spawn(exe string, p paths.Paths, env []string) (*os.Process, error) {
	if err := p.Ensure(); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(p.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the log file for the daemon: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, "daemon", "start", "--foreground")
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	// The daemon's working folder is the state folder: it must not pin the
	// folder the user happened to be in (nodes get theirs from their spec).
	cmd.Dir = p.State
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the daemon (%s): %w", exe, err)
	}
	return cmd.Process, nil
}
