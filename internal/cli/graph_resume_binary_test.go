//go:build unix

package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// graphRuns is `nerve graph runs NAME --json`, newest first; the command
// starts the daemon if it is not running.
func graphRuns(t *testing.T, n *realNerve, name string) []runSummary {
	t.Helper()
	out := n.Must("graph", "runs", name, "--json")
	var runs []runSummary
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		t.Fatalf("graph runs %s --json: %v\n%s", name, err, out)
	}
	return runs
}

// lines are the lines of file; none if it is missing.
func lines(file string) []string {
	b, _ := os.ReadFile(file)
	return strings.Fields(string(b))
}

// startCall starts `nerve call ARGS` in the background; wait ends it.
func startCall(t *testing.T, n *realNerve, args ...string) (wait func() (string, string, error)) {
	t.Helper()
	cmd := n.Command(append([]string{"call"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	waited := false
	t.Cleanup(func() {
		if !waited {
			cmd.Process.Kill()
			<-done
		}
	})
	return func() (string, string, error) {
		if !waited {
			err, waited = <-done, true
		}
		return out.String(), errb.String(), err
	}
}

// killDaemon SIGKILLs the daemon and waits until it is gone.
func killDaemon(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the daemon (pid %d): %v", pid, err)
	}
	testutil.WaitFor(t, 30*time.Second, func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		// Gone, or a zombie its parent has not reaped yet.
		return err != nil || strings.Contains(string(b), ") Z ")
	}, "the killed daemon to exit")
}

// TestBinaryGraphKillNeverRerunsFinishedStep kills the daemon (SIGKILL)
// at random points of a chain of bash steps that each append their name to
// a log as they start, 20 times; each time the restarted daemon resumes
// the run. A step that had finished — the next step had started, or the
// record said so — never runs again; only the step in flight at the kill
// (the log's last line, when not recorded finished) may. Before steps
// were journaled, 13 of 20 kills made the resume run a finished step again
// (records were written at most every 100 ms).
func TestBinaryGraphKillNeverRerunsFinishedStep(t *testing.T) {
	n := newRealNerve(t)
	const steps = 8
	var def strings.Builder
	def.WriteString("inputs: {log: string}\nsteps:\n")
	for i := range steps {
		after := ""
		if i > 0 {
			after = fmt.Sprintf(", after: s%d", i-1)
		}
		// A line says the step started; it ends 10 ms later.
		fmt.Fprintf(&def, "  s%d: {call: sh.bash, args: {command: \"echo s%d >> ${inputs.log}; sleep 0.01; echo %d\"}%s}\n", i, i, i, after)
	}
	defFile := filepath.Join(n.home, "chain.yaml")
	os.WriteFile(defFile, []byte(def.String()), 0o600)
	n.Must("node", "add", "bash", "sh")
	n.Must("graph", "add", "chain", "--from", defFile)

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 22))
	var bad []string
	resumed, badRounds := 0, 0
	for round := range 20 {
		log := filepath.Join(n.home, fmt.Sprintf("round%02d.log", round))
		pid := daemonPID(t, n)
		wait := startCall(t, n, "@chain", "log="+log)
		// Kill once a random number of steps started, a random moment
		// later: inside a step, between two, or after the end.
		k := 1 + rng.IntN(steps)
		jitter := time.Duration(rng.IntN(15000)) * time.Microsecond
		for deadline := time.Now().Add(60 * time.Second); len(lines(log)) < k; time.Sleep(200 * time.Microsecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: step s%d did not start in 60 s", round, k-1)
			}
		}
		time.Sleep(jitter)
		killDaemon(t, pid)
		wait()
		atKill := lines(log)

		runs := graphRuns(t, n, "chain") // starts a new daemon
		if len(runs) == 0 || runs[0].Inputs["log"] != log {
			t.Fatalf("round %d: the run is not the newest in %+v", round, runs)
		}
		run := runs[0]
		recordedDone := map[string]bool{}
		for _, st := range run.Steps {
			if st["state"] == "finished" {
				recordedDone[st["id"].(string)] = true
			}
		}
		switch run.State {
		case "finished":
		case "interrupted":
			resumed++
			if out, errs, code := n.Run("graph", "resume", run.ID); code != 0 || !strings.HasSuffix(out, fmt.Sprintf("%d\n", steps-1)) {
				t.Fatalf("round %d: resume: exit %d\nstdout: %s\nstderr: %s", round, code, out, errs)
			}
		default:
			t.Fatalf("round %d: run %s is %s after the kill: %s", round, run.ID, run.State, run.Error)
		}

		counts := map[string]int{}
		for _, l := range lines(log) {
			counts[l]++
		}
		before := len(bad)
		inFlight := ""
		if len(atKill) > 0 && !recordedDone[atKill[len(atKill)-1]] {
			inFlight = atKill[len(atKill)-1]
		}
		for i := range steps {
			id := fmt.Sprintf("s%d", i)
			switch {
			case counts[id] == 1:
			case counts[id] == 2 && id == inFlight:
				// In flight at the kill: it runs again, as documented.
			default:
				bad = append(bad, fmt.Sprintf("round %d (killed after %d of %d lines, run %s): %s ran %d times; in flight at the kill: %q; recorded finished: %v",
					round, len(atKill), steps, run.State, id, counts[id], inFlight, recordedDone))
			}
		}
		if len(bad) > before {
			badRounds++
		}
	}
	t.Logf("%d of 20 kills left a run to resume", resumed)
	if len(bad) > 0 {
		t.Errorf("in %d of 20 rounds a step ran other than once (a finished step ran again):\n%s", badRounds, strings.Join(bad, "\n"))
	}
}

// TestBinaryGraphConcurrentResume starts four `nerve graph resume` of one
// interrupted run at once: one runs the remaining steps, the others are
// refused at once with a message naming the run; no step runs twice.
func TestBinaryGraphConcurrentResume(t *testing.T) {
	n := newRealNerve(t)
	work := filepath.Join(n.home, "w")
	os.MkdirAll(work, 0o700)
	log, gate := filepath.Join(work, "log"), filepath.Join(work, "go")
	os.WriteFile(filepath.Join(n.home, "g.yaml"), []byte(`
inputs: {dir: string}
steps:
  s1: {call: sh.bash, args: {command: "echo s1 >> ${inputs.dir}/log"}}
  s2: {call: sh.bash, args: {command: "echo s2 >> ${inputs.dir}/log; while [ ! -e ${inputs.dir}/go ]; do sleep 0.05; done"}, after: s1}
  s3: {call: sh.bash, args: {command: "echo s3 >> ${inputs.dir}/log; echo done"}, after: s2}
`), 0o600)
	n.Must("node", "add", "bash", "sh")
	n.Must("graph", "add", "g", "--from", filepath.Join(n.home, "g.yaml"))
	pid := daemonPID(t, n)
	wait := startCall(t, n, "@g", "dir="+work)
	testutil.WaitFor(t, 60*time.Second, func() bool { return len(lines(log)) == 2 }, "step s2 to start")
	killDaemon(t, pid)
	wait()
	runs := graphRuns(t, n, "g")
	if len(runs) != 1 || runs[0].State != "interrupted" {
		t.Fatalf("runs after the kill: %+v", runs)
	}
	id := runs[0].ID

	// s2 waits for the gate in whichever resume runs it: the others must
	// be refused while it waits.
	type result struct {
		out, errs string
		code      int
	}
	results := make(chan result, 4)
	for range 4 {
		go func() {
			cmd := n.Command("graph", "resume", id)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			cmd.Run()
			results <- result{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
		}()
	}
	var refused []result
	timeout := time.After(60 * time.Second)
	for len(refused) < 3 {
		select {
		case r := <-results:
			if r.code == 0 {
				t.Fatalf("a resume finished while the gate was shut: %+v", r)
			}
			refused = append(refused, r)
		case <-timeout:
			os.WriteFile(gate, nil, 0o600)
			t.Fatalf("after 60 s only %d of 4 resumes were refused; log: %q", len(refused), lines(log))
		}
	}
	want := "run " + id + " is being resumed by another caller; one caller at a time may run it"
	for _, r := range refused {
		if r.code != ExitFailed || !strings.Contains(r.errs, want) {
			t.Errorf("a refused resume: exit %d, stderr %q; want exit %d and %q", r.code, r.errs, ExitFailed, want)
		}
	}
	os.WriteFile(gate, nil, 0o600)
	if r := <-results; r.code != 0 || r.out != "done\n" {
		t.Errorf("the resume that ran: exit %d, stdout %q, stderr %s", r.code, r.out, r.errs)
	}
	// s2 was in flight at the kill: it ran again once, in one resume.
	if got := strings.Join(lines(log), " "); got != "s1 s2 s2 s3" {
		t.Errorf("log %q, want s1 s2 s2 s3", got)
	}
	if _, errs, code := n.Run("graph", "resume", id); code != ExitFailed || !strings.Contains(errs, "finished; there is nothing to resume") {
		t.Errorf("resume of the finished run: exit %d, %s", code, errs)
	}
}

// TestBinaryGraphResumeKeepsWholeResult: a step's result over the 64 KiB a
// run record keeps (seq 1 100000: 588,895 bytes) reaches a resumed run
// whole. Before, the resume reused the record's cut text: 65,545 bytes and
// exit 0.
func TestBinaryGraphResumeKeepsWholeResult(t *testing.T) {
	n := newRealNerve(t)
	work := filepath.Join(n.home, "w")
	os.MkdirAll(work, 0o700)
	os.WriteFile(filepath.Join(n.home, "g.yaml"), []byte(`
inputs: {dir: string}
steps:
  big: {call: sh.bash, args: {command: "echo big >> ${inputs.dir}/log; seq 1 100000"}}
  wait: {call: sh.bash, args: {command: "touch ${inputs.dir}/waiting; while [ ! -e ${inputs.dir}/go ]; do sleep 0.05; done"}, after: big}
output: "${steps.big.text}"
`), 0o600)
	n.Must("node", "add", "bash", "sh")
	n.Must("graph", "add", "g", "--from", filepath.Join(n.home, "g.yaml"))
	pid := daemonPID(t, n)
	wait := startCall(t, n, "@g", "dir="+work)
	// The record says big finished, with its text cut: the resume must
	// not take that text.
	runsDir := filepath.Join(n.home, "sessions", "default", "nodes", "g", "runs")
	testutil.WaitFor(t, 60*time.Second, func() bool {
		if _, err := os.Stat(filepath.Join(work, "waiting")); err != nil {
			return false
		}
		files, _ := filepath.Glob(filepath.Join(runsDir, "*.json"))
		for _, f := range files {
			if b, _ := os.ReadFile(f); bytes.Contains(b, []byte(`{"id":"big","state":"finished"`)) {
				return true
			}
		}
		return false
	}, "step wait to start, with big recorded finished (in "+runsDir+")")
	killDaemon(t, pid)
	wait()
	os.WriteFile(filepath.Join(work, "go"), nil, 0o600)
	runs := graphRuns(t, n, "g")
	if len(runs) != 1 || runs[0].State != "interrupted" {
		t.Fatalf("runs after the kill: %+v", runs)
	}
	want, err := exec.Command("seq", "1", "100000").Output()
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := n.Run("graph", "resume", runs[0].ID)
	if code != 0 || strings.TrimRight(out, "\n") != strings.TrimRight(string(want), "\n") {
		t.Errorf("resume: exit %d, %d bytes of output (want %d), ending %q; stderr %s", code, len(out), len(want), out[max(0, len(out)-30):], errs)
	}
	if got := lines(filepath.Join(work, "log")); len(got) != 1 {
		t.Errorf("step big ran %d times, want once", len(got))
	}
}
