package front

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
)

// execCore runs the core as a child (Windows has no exec) with this
// process's console and returns its exit code. Ctrl-C reaches both; the
// front leaves it to the core.
func execCore(core string, args, env []string) int {
	signal.Ignore(os.Interrupt)
	cmd := exec.Command(core, args[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "nerve: running %s: %v\n", core, err)
		return exitFailed
	}
	return exitOK
}

// lockFile does not lock on Windows: two fronts building the core at once
// both run the go command, which writes the same file.
func lockFile(string) (func(), error) { return func() {}, nil }

// fastCall is the core's on Windows: the front only starts it.
func fastCall(string, []string) (int, bool) { return 0, false }
