//go:build unix

package cli

import (
	"bufio"
	"encoding/json"
	"io"
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
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/node"
)

// TestBinaryCallKeepsWords: each word the shell hands `nerve call` stays
// one word. nerve joined argv with spaces and parsed it again, so
// message="first step", content="it's fine" and echo "a   b" broke.
// Arguments may also come as JSON on stdin.
func TestBinaryCallKeepsWords(t *testing.T) {
	n := newRealNerve(t)
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	n.Must(append([]string{"node", "add", "mcp", "every", "--"}, npmfix.ServerEverything(t)...)...)
	n.Must(append([]string{"node", "add", "mcp", "fs", "--"}, npmfix.ServerFilesystem(t, dir)...)...)
	n.Must("node", "add", "bash", "sh")

	if out := n.Must("call", "@every", "echo", "message=first step"); !strings.Contains(out, "Echo: first step") {
		t.Errorf(`message="first step": %q`, out)
	}
	file := filepath.Join(dir, "a.txt")
	n.Must("call", "@fs", "write_file", "path="+file, "content=it's fine")
	if b, _ := os.ReadFile(file); string(b) != "it's fine" {
		t.Errorf(`content="it's fine" wrote %q`, b)
	}
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"echo", "a   b"}, "a   b\n"},
		{[]string{"echo", "it's", "$HOME", `x"y`, "*.none"}, "it's $HOME x\"y *.none\n"},
		{[]string{"printf", "%s|", "one word", ""}, "one word||\n"},
	} {
		if out := n.Must(append([]string{"call", "@sh"}, c.argv...)...); out != c.want {
			t.Errorf("nerve call @sh %q = %q, want %q", c.argv, out, c.want)
		}
	}

	// JSON on stdin: with -, and for a tool that needs arguments and got none.
	n.Stdin = `{"message": "from stdin"}`
	if out := n.Must("call", "@every", "echo", "-"); !strings.Contains(out, "Echo: from stdin") {
		t.Errorf("echo - with JSON on stdin: %q", out)
	}
	if out := n.Must("call", "@every", "echo"); !strings.Contains(out, "Echo: from stdin") {
		t.Errorf("echo with JSON on stdin and no arguments: %q", out)
	}
	n.Stdin = "echo text for a single-tool node"
	if out := n.Must("call", "@sh", "-"); out != "text for a single-tool node\n" {
		t.Errorf("@sh - with text on stdin: %q", out)
	}
	n.Stdin = ""
	_, errs, code := n.Run("call", "@every", "echo")
	if code != ExitUsage || !strings.Contains(errs, "message") {
		t.Errorf("echo with no arguments and empty stdin: exit %d, %q; want a usage error naming message", code, errs)
	}
}

// TestBinaryCallToNodeInError: a bash node whose shell was killed between
// calls is ERROR, and the next call says so and how to restart it — not
// that the tool is unknown.
func TestBinaryCallToNodeInError(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "bash", "sh")
	killShell(t, n, "sh")
	_, errs, code := n.Run("call", "@sh", "echo", "hi")
	if code != ExitFailed || !strings.Contains(errs, `node "sh" is ERROR (bash was killed by signal 9`) || !strings.Contains(errs, "`nerve node restart sh`") {
		t.Errorf("a call to a node in ERROR: exit %d, %q", code, errs)
	}
	n.Must("node", "restart", "sh")
	if out := n.Must("call", "@sh", "echo", "hi"); out != "hi\n" {
		t.Errorf("after a restart: %q", out)
	}
}

// killShell kills node id's shell with SIGKILL while it is idle and waits
// until the node is ERROR.
func killShell(t *testing.T, n *realNerve, id string) {
	t.Helper()
	var d struct{ Info node.Info }
	if err := json.Unmarshal([]byte(n.Must("--json", "node", "info", id)), &d); err != nil {
		t.Fatal(err)
	}
	pid, _ := d.Info.Details["pid"].(float64)
	if pid == 0 {
		t.Fatalf("node %s has no shell pid: %v", id, d.Info.Details)
	}
	if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, func() bool {
		return json.Unmarshal([]byte(n.Must("--json", "node", "info", id)), &d) == nil && d.Info.State == node.Error
	}, "the node to be ERROR")
}

// TestBinaryShellExitThenFreshShell: `nerve call @sh exit 3` names the
// command that ended the shell, at once, on its first line; the next call
// runs in a fresh shell instead of failing until a restart (issue 27).
func TestBinaryShellExitThenFreshShell(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "bash", "sh", "--cwd", n.home)
	n.Must("call", "@sh", "cd /")
	_, errs, code := n.Run("call", "@sh", "exit", "3")
	if code != ExitToolError || !strings.HasPrefix(errs, "error: [`exit 3` ended the shell: bash exited with status 3;") || !strings.Contains(errs, "the next call starts a fresh shell") {
		t.Errorf("nerve call @sh exit 3: exit %d, stderr %q", code, errs)
	}
	if out := n.Must("call", "@sh", "pwd"); out != n.home+"\n" {
		t.Errorf("the call after exit 3: %q; want a fresh shell in %s", out, n.home)
	}
}

// TestBinaryBackgroundCallStopsOnSignal: a shell starts `nerve call … &`
// with SIGINT ignored; SIGINT (and SIGTERM) still cancel the call, in the
// daemon too, and nerve exits 130 (143).
func TestBinaryBackgroundCallStopsOnSignal(t *testing.T) {
	n := newRealNerve(t)
	n.Must("node", "add", "bash", "sh")
	// Ended by a signal, nerve exits as a shell's job the signal ended:
	// 128 + its number (it exited 1; issue 27).
	for sig, code := range map[string]string{"INT": "130", "TERM": "143"} {
		// sh -c runs the job in the background with SIGINT ignored, prints
		// its pid, and waits for it.
		cmd := n.Command()
		cmd.Args = []string{"sh", "-c", `"$0" call @sh "sleep 60" & echo $!; wait $!; echo "exit $?"`, n.bin}
		cmd.Path = "/bin/sh"
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var errb strings.Builder
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(out)
		line, _ := r.ReadString('\n')
		pid, _ := strconv.Atoi(strings.TrimSpace(line))
		testutil.WaitFor(t, 20*time.Second, func() bool {
			o, _, _ := n.Run("node", "ls")
			return regexp.MustCompile(`(?m)^sh\s+bash\s+BUSY`).MatchString(o)
		}, "the call to run")
		exec.Command("kill", "-"+sig, strconv.Itoa(pid)).Run()
		done := make(chan string, 1)
		go func() { rest, _ := io.ReadAll(r); cmd.Wait(); done <- string(rest) }()
		select {
		case rest := <-done:
			if !strings.Contains(rest, "exit "+code) || !strings.Contains(errb.String(), "interrupted: the call to @sh bash was cancelled") {
				t.Errorf("SIG%s: %q %q", sig, rest, errb.String())
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("SIG%s did not stop a background nerve call", sig)
		}
		testutil.WaitFor(t, 20*time.Second, func() bool {
			o, _, _ := n.Run("node", "ls")
			return regexp.MustCompile(`(?m)^sh\s+bash\s+READY`).MatchString(o)
		}, "the call to end in the daemon")
	}
}

// TestBinaryCallCutOutput: a call whose output the node cut exits 4 and
// names the file that holds all of it, so a script never takes a part for
// the whole (issue 22: it exited 0 with 1 MiB of 22.9 MB on stdout).
func TestBinaryCallCutOutput(t *testing.T) {
	n := newRealNerve(t)
	out, errs, code := n.Run("call", "@bash", "seq 1 3000000")
	if code != ExitCut {
		t.Fatalf("exit %d, want %d (cut); stderr %q", code, ExitCut, errs)
	}
	m := regexp.MustCompile(`all of it is in (\S+)`).FindStringSubmatch(errs)
	if m == nil || !strings.Contains(errs, "the output was cut (22888896 bytes in all)") {
		t.Fatalf("stderr does not name the file: %q", errs)
	}
	whole, err := os.ReadFile(m[1])
	if err != nil || len(whole) != 22888896 || !strings.HasSuffix(string(whole), "\n2999999\n3000000\n") {
		t.Fatalf("%s holds %d bytes (%v), want all 22888896", m[1], len(whole), err)
	}
	if !strings.HasPrefix(out, "1\n2\n3\n") || len(out) > 1<<20+400 {
		t.Errorf("stdout: %d bytes starting %q", len(out), out[:min(20, len(out))])
	}
}

// TestBinaryReentrantCallFailsFast: a graph step's command that calls the
// bash node it runs in (`nerve call @bash …` inside @bash) is refused at
// once, saying why; it waited for itself until the step's timeout (issue
// 27 item 6). The same from a plain `nerve call`.
func TestBinaryReentrantCallFailsFast(t *testing.T) {
	n := newRealNerve(t)
	n.Must("graph", "add", "re", "--from", writeFile(t, filepath.Join(n.home, "re.yaml"), `
steps:
  s: {call: bash.bash, args: {command: "'`+n.bin+`' call @bash echo inner", timeout_s: 5}}
`))
	_, errs, code := n.Run("call", "@re", "run")
	want := "bash node \"bash\" is running the command this call was made from"
	if code != ExitToolError || !strings.Contains(errs, want) || strings.Contains(errs, "timed out") {
		t.Errorf("a graph step calling its own bash node: exit %d, stderr %q; want %q at once", code, errs, want)
	}
	inner, _ := json.Marshal(map[string]any{"command": "'" + n.bin + "' call @bash echo inner; echo outer-goes-on", "timeout_s": 5})
	out, errs, code := n.Run("call", "@bash", "bash", string(inner))
	if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "outer-goes-on") {
		t.Errorf("nerve call @bash 'nerve call @bash …': exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	// A call from a job the command left behind, once it ended, waits its
	// turn as any other and runs.
	n.Must("call", "@bash", "('"+n.bin+"' call @bash echo from-the-job > "+filepath.Join(n.home, "job.out")+" 2>&1 &)")
	testutil.WaitFor(t, 20*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(n.home, "job.out"))
		return strings.Contains(string(b), "from-the-job")
	}, "the job's call to run")
}
