//go:build unix

package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestGraphResumeAfterDaemonKill kills the daemon (SIGKILL) in the middle
// of a run; the restarted daemon marks the run interrupted, and
// `nerve graph resume` finishes it without running the finished step again.
func TestGraphResumeAfterDaemonKill(t *testing.T) {
	nerve := testutil.BuildBinary(t, "./cmd/nerve")
	home, err := os.MkdirTemp("", "ng")
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(home, "w")
	os.MkdirAll(work, 0o700)
	command := func(args ...string) *exec.Cmd {
		cmd := exec.Command(nerve, args...)
		cmd.Env = append(os.Environ(), "NERVE_HOME="+home, "NERVE_SESSION=", "XDG_RUNTIME_DIR=")
		cmd.Dir = home
		return cmd
	}
	run := func(args ...string) (string, string, int) {
		cmd := command(args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("running nerve %v: %v", args, err)
		}
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}
	t.Cleanup(func() {
		run("daemon", "stop")
		os.RemoveAll(home)
	})
	must := func(args ...string) string {
		t.Helper()
		out, errs, code := run(args...)
		if code != 0 {
			t.Fatalf("nerve %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
		}
		return out
	}
	def := filepath.Join(home, "g.yaml")
	os.WriteFile(def, []byte(`
inputs: {dir: string}
steps:
  first:  {call: sh.bash, args: {command: "echo ran >> ${inputs.dir}/first.log; echo A"}}
  second: {call: sh.bash, args: {command: "touch ${inputs.dir}/second.started; while [ ! -e ${inputs.dir}/go ]; do sleep 0.05; done; echo B"}, after: first}
output: "${steps.first.text}${steps.second.text}"
`), 0o600)
	must("node", "add", "bash", "sh")
	must("graph", "add", "g", "--from", def)
	status := must("daemon", "status")
	m := regexp.MustCompile(`pid (\d+)`).FindStringSubmatch(status)
	if m == nil {
		t.Fatalf("daemon status: %q", status)
	}
	pid, _ := strconv.Atoi(m[1])

	call := command("call", "@g", "dir="+work)
	var callErr bytes.Buffer
	call.Stderr = &callErr
	if err := call.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Let a run left waiting end, and the call with it.
		os.WriteFile(filepath.Join(work, "go"), nil, 0o600)
		if call.ProcessState == nil {
			call.Process.Kill()
			call.Wait()
		}
	})
	runsDir := filepath.Join(home, "sessions", "default", "nodes", "g", "runs")
	// The second step is running and the first one's end is on disk.
	testutil.WaitFor(t, 60*time.Second, func() bool {
		if _, err := os.Stat(filepath.Join(work, "second.started")); err != nil {
			return false
		}
		files, _ := filepath.Glob(filepath.Join(runsDir, "*.json"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if strings.Contains(string(b), `"id":"first","state":"finished"`) {
				return true
			}
		}
		return false
	}, "the second step to start with the first recorded as finished (runs in "+runsDir+")")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := call.Wait(); err == nil {
		t.Errorf("the call survived its daemon's death: %s", callErr.String())
	}
	os.WriteFile(filepath.Join(work, "go"), nil, 0o600)

	// The next command starts a new daemon, which restores the session.
	out := must("graph", "runs", "g", "--json")
	var runs []runSummary
	if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v %s", err, out)
	}
	if runs[0].State != "interrupted" {
		t.Fatalf("run state %q, want interrupted", runs[0].State)
	}
	if runs[0].Millis <= 0 {
		t.Errorf("the interrupted run took %v ms; want its real time up to the last step it recorded (issue 17, item 9)", runs[0].Millis)
	}
	got, errs, code := run("graph", "resume", runs[0].ID)
	if code != 0 || got != "AB\n" { // each step's text loses its trailing newline
		t.Fatalf("resume: exit %d, stdout %q, stderr %s", code, got, errs)
	}
	if !strings.Contains(errs, "⤼ first skipped (finished before; resumed)") {
		t.Errorf("resume stderr: %s", errs)
	}
	if b, _ := os.ReadFile(filepath.Join(work, "first.log")); string(b) != "ran\n" {
		t.Errorf("the first step ran %d times, want once", strings.Count(string(b), "ran"))
	}
	out = must("graph", "runs", "g")
	if !strings.Contains(out, runs[0].ID+"  finished") {
		t.Errorf("runs after resume:\n%s", out)
	}
	// Runs are counted from the records, across daemons; -n limits the list.
	if out := must("graph", "show", runs[0].ID); !strings.Contains(out, "── first   sh.bash  [finished") || !strings.Contains(out, "── second  sh.bash  ← first  [finished") {
		t.Errorf("graph show RUN: want the picture with each step's state:\n%s", out)
	}
	must("call", "@g", "dir="+work)
	must("daemon", "stop")
	if out := must("graph", "ls"); !regexp.MustCompile(`(?m)^g\s+READY\s+2\s+2\s`).MatchString(out) {
		t.Errorf("graph ls after two runs and a daemon restart: want RUNS 2 (the records)\n%s", out)
	}
	if out := must("graph", "runs", "g", "-n", "1"); strings.Count(out, "\ng.") != 1 {
		t.Errorf("graph runs g -n 1:\n%s", out)
	}
}
