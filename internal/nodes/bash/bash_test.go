//go:build unix

package bash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nerve-dev/nerve/internal/childproc"
	"github.com/nerve-dev/nerve/pkg/node"
)

// requireBash skips (or, under NERVE_REQUIRE_E2E=1, fails) without bash.
func requireBash(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		if os.Getenv("NERVE_REQUIRE_E2E") == "1" {
			t.Fatalf("bash is required (NERVE_REQUIRE_E2E=1): %v", err)
		}
		t.Skipf("bash not found, skipping: %v", err)
	}
}

// transitions records a node's state changes.
type transitions struct {
	mu  sync.Mutex
	got []string
	ch  chan node.State
}

func (tr *transitions) observe(from, to node.State, reason string) {
	tr.mu.Lock()
	tr.got = append(tr.got, to.String())
	tr.mu.Unlock()
	select {
	case tr.ch <- to:
	default:
	}
}

func (tr *transitions) list() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.got)
}

func startNode(t testing.TB, spec node.Spec) (*Node, *transitions) {
	t.Helper()
	requireBash(t)
	if spec.ID == "" {
		spec.ID = "sh"
	}
	spec.Kind = Kind
	tr := &transitions{ch: make(chan node.State, 64)}
	nn, err := New(spec, node.Env{OnState: tr.observe, Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	n := nn.(*Node)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := n.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return n, tr
}

// reply is a call's result as a user reads it.
type reply struct {
	text   string
	res    Result
	isErr  bool
	events string // streamed text
}

func call(t testing.TB, n *Node, command string, timeoutS float64) reply {
	t.Helper()
	r, err := callErr(context.Background(), n, command, timeoutS)
	if err != nil {
		t.Fatalf("CallTool(%q): %v", command, err)
	}
	return r
}

func callErr(ctx context.Context, n *Node, command string, timeoutS float64) (reply, error) {
	a := map[string]any{"command": command}
	if timeoutS > 0 {
		a["timeout_s"] = timeoutS
	}
	raw, _ := json.Marshal(a)
	var mu sync.Mutex
	var events strings.Builder
	res, err := n.CallTool(ctx, &node.CallRequest{Tool: ToolName, Arguments: raw, Observe: func(ev node.CallEvent) {
		mu.Lock()
		events.WriteString(ev.Text)
		mu.Unlock()
	}})
	if err != nil {
		return reply{}, err
	}
	r := reply{isErr: res.IsError, events: events.String()}
	if len(res.Content) != 1 {
		return r, fmt.Errorf("want 1 content block, got %d", len(res.Content))
	}
	r.text = res.Content[0].(*mcp.TextContent).Text
	r.res = res.StructuredContent.(Result)
	return r, nil
}

func TestStatePersistsBetweenCalls(t *testing.T) {
	dir := t.TempDir()
	n, _ := startNode(t, node.Spec{})
	steps := []struct {
		command, want string
	}{
		{"cd " + dir, ""},
		{"pwd", dir + "\n"},
		{"export GREETING=hello; plain=kept", ""},
		{`echo "$GREETING $plain"; bash -c 'echo "child sees $GREETING"'`, "hello kept\nchild sees hello\n"},
		{"greet() { echo \"hi $1\"; }", ""},
		{"greet bob", "hi bob\n"},
		{"declare -A ages=([ann]=31); alias ll='echo listed'", ""},
		{"echo ${ages[ann]}; ll", "31\nlisted\n"},
		{"mkdir sub && cd sub", ""},
		{"pwd", filepath.Join(dir, "sub") + "\n"},
	}
	for _, s := range steps {
		r := call(t, n, s.command, 0)
		if r.text != s.want || r.isErr {
			t.Fatalf("%q: got %q (isError %v), want %q", s.command, r.text, r.isErr, s.want)
		}
	}
	if got := n.Info().Summary; got != "bash in "+filepath.Join(dir, "sub") {
		t.Errorf("Info().Summary = %q, want the live folder", got)
	}
}

func TestExitStatus(t *testing.T) {
	n, _ := startNode(t, node.Spec{})
	for _, tc := range []struct {
		command  string
		text     string
		exit     int
		isErr    bool
		contains bool
	}{
		{command: "echo ok", text: "ok\n", exit: 0},
		{command: "true", text: "", exit: 0},
		{command: "false", text: "[exit 1]\n", exit: 1, isErr: true},
		{command: "echo out; echo err >&2; (exit 2)", text: "out\nerr\n[exit 2]\n", exit: 2, isErr: true},
		{command: "printf 'no newline'; exit_with() { return $1; }; exit_with 7", text: "no newline\n[exit 7]\n", exit: 7, isErr: true},
		{command: "no-such-command-xyz", text: "no-such-command-xyz: command not found", exit: 127, isErr: true, contains: true},
		// A syntax error is the command's failure, not the shell's.
		{command: `echo "unclosed`, text: "unexpected EOF while looking for matching", exit: 2, isErr: true, contains: true},
		{command: "if then fi", text: "syntax error", exit: 2, isErr: true, contains: true},
		{command: "echo still here", text: "still here\n", exit: 0},
		// Errors after which bash abandons the rest of the line still end
		// the call (they used to leave it waiting for its end marker).
		{command: "exit 1 2; echo not reached", text: "exit: too many arguments", exit: 1, isErr: true, contains: true},
		{command: "echo ${NERVE_UNSET_VAR?is not set}", text: "NERVE_UNSET_VAR: is not set", exit: 1, isErr: true, contains: true},
		{command: "echo still here", text: "still here\n", exit: 0},
		// Bytes that are not UTF-8, and a multi-line script with a heredoc.
		{command: "cat <<'EOF'\n$HOME is literal\nEOF", text: "$HOME is literal\n", exit: 0},
		{command: "echo 'héllo wörld' | wc -c", text: "14\n", exit: 0},
	} {
		r := call(t, n, tc.command, 0)
		okText := r.text == tc.text || (tc.contains && strings.Contains(r.text, tc.text))
		if !okText || r.res.ExitCode != tc.exit || r.isErr != tc.isErr {
			t.Errorf("%q: got text %q exit %d isError %v; want text %q exit %d isError %v",
				tc.command, r.text, r.res.ExitCode, r.isErr, tc.text, tc.exit, tc.isErr)
		}
	}
}

func TestStreamsOutput(t *testing.T) {
	n, _ := startNode(t, node.Spec{})
	r := call(t, n, "for i in 1 2 3; do echo line $i; done", 0)
	if r.events != r.text || r.text != "line 1\nline 2\nline 3\n" {
		t.Fatalf("streamed %q, result %q", r.events, r.text)
	}
}

func TestStdinIsEmpty(t *testing.T) {
	n, _ := startNode(t, node.Spec{})
	// Would hang forever if the command could read the shell's input.
	r := call(t, n, `cat; read -r line; echo "read status $?"; python3 -c 'import sys; print(repr(sys.stdin.read()))' 2>/dev/null || echo "''"`, 30)
	if r.text != "read status 1\n''\n" {
		t.Fatalf("got %q", r.text)
	}
}

// descendantsOf lists the live processes below pid.
func descendantsOf(t *testing.T, pid int) []childproc.ProcInfo {
	t.Helper()
	procs, err := childproc.ProcessTable()
	if err != nil {
		t.Fatal(err)
	}
	return childproc.Descendants(procs, pid)
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	procs, err := childproc.ProcessTable()
	if err != nil {
		return false
	}
	for _, p := range procs {
		if p.Pid == pid {
			return !p.Zombie
		}
	}
	return false
}

// waitDead waits, with a deadline, until none of pids is alive.
func waitDead(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var live []int
		for _, p := range pids {
			if alive(p) {
				live = append(live, p)
			}
		}
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v still alive", live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTimeoutStopsCommandAndKeepsShell(t *testing.T) {
	dir := t.TempDir()
	n, _ := startNode(t, node.Spec{})
	call(t, n, "cd "+dir+"; kept=yes", 0)
	for _, tc := range []struct{ name, command string }{
		{"sleep", "sleep 100"},
		{"sleep in a loop in a function", "f() { for i in 1 2 3; do sleep 100; done; }; f; echo AFTER"},
		{"busy loop in the shell itself", "while :; do :; done"},
		{"child that ignores SIGINT", `bash -c 'trap "" INT; sleep 100'; echo after`},
		{"pipeline", "yes | sleep 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, n, tc.command, 0.5)
			if !r.res.TimedOut || r.res.ExitCode != 124 || !r.isErr || strings.Contains(r.text, "AFTER") ||
				!strings.Contains(r.text, "[timed out after 500ms: the command was stopped, the shell keeps its state]") {
				t.Fatalf("got %q %+v", r.text, r.res)
			}
			if left := descendantsOf(t, n.sh.pid); len(left) > 0 {
				waitDead(t, left[0].Pid)
			}
			if r := call(t, n, "pwd; echo $kept", 0); r.text != dir+"\nyes\n" {
				t.Fatalf("after the timeout: %q", r.text)
			}
		})
	}
}

func TestInterruptStopsCommandAndKeepsShell(t *testing.T) {
	dir := t.TempDir()
	n, tr := startNode(t, node.Spec{Cwd: dir})
	call(t, n, "kept=yes", 0)
	started := make(chan struct{})
	var once sync.Once
	type out struct {
		r   reply
		err error
	}
	done := make(chan out, 1)
	go func() {
		raw := []byte(`{"command": "echo started; sleep 100; echo after", "timeout_s": 60}`)
		res, err := n.CallTool(context.Background(), &node.CallRequest{Tool: ToolName, Arguments: raw, Observe: func(ev node.CallEvent) {
			if strings.Contains(ev.Text, "started") {
				once.Do(func() { close(started) })
			}
		}})
		if err != nil {
			done <- out{err: err}
			return
		}
		done <- out{r: reply{text: res.Content[0].(*mcp.TextContent).Text, res: res.StructuredContent.(Result), isErr: res.IsError}}
	}()
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("command did not start")
	}
	if st := n.State(); st != node.Busy {
		t.Errorf("state during the call = %s, want BUSY", st)
	}
	if err := n.Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	var o out
	select {
	case o = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("call did not return after Interrupt")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	if !o.r.res.Interrupted || o.r.res.ExitCode != 130 || !o.r.isErr || o.r.text != "started\n[interrupted: the command was stopped, the shell keeps its state]\n" {
		t.Fatalf("got %q %+v", o.r.text, o.r.res)
	}
	if r := call(t, n, "pwd; echo $kept", 0); r.text != dir+"\nyes\n" {
		t.Fatalf("after the interrupt: %q", r.text)
	}
	if st := n.State(); st != node.Ready {
		t.Errorf("state after = %s, want READY (transitions %v)", st, tr.list())
	}
	// Interrupt with nothing in flight does nothing.
	if err := n.Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := call(t, n, "echo fine", 0); r.text != "fine\n" {
		t.Fatalf("after an idle interrupt: %q", r.text)
	}
}

func TestInterruptAsSoonAsBusy(t *testing.T) {
	n, tr := startNode(t, node.Spec{})
	for i := range 5 {
		done := make(chan reply, 1)
		go func() {
			r, err := callErr(context.Background(), n, "sleep 100; echo AFTER", 60)
			if err != nil {
				t.Error(err)
			}
			done <- r
		}()
		waitState(t, tr, node.Busy, 2*i+1) // each round makes two calls
		if err := n.Interrupt(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			if !r.res.Interrupted || strings.Contains(r.text, "AFTER") {
				t.Fatalf("got %q %+v", r.text, r.res)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("call did not return after Interrupt")
		}
		if r := call(t, n, "echo ok", 0); r.text != "ok\n" {
			t.Fatalf("after the interrupt: %q", r.text)
		}
	}
}

func TestCancelledCallStopsCommand(t *testing.T) {
	n, _ := startNode(t, node.Spec{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := callErr(ctx, n, "sleep 100", 60)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
	if r := call(t, n, "echo next", 0); r.text != "next\n" {
		t.Fatalf("after cancel: %q", r.text)
	}
}

func TestBackgroundJobsSurviveInterruptsButNotStop(t *testing.T) {
	n, _ := startNode(t, node.Spec{})
	r := call(t, n, "sleep 300 & echo $!; (sleep 301 & echo $!); setsid sleep 302 & echo $!", 0)
	var pids []int
	for _, f := range strings.Fields(r.text) {
		if pid, err := strconv.Atoi(f); err == nil && !strings.HasPrefix(f, "[") {
			pids = append(pids, pid)
		}
	}
	// "[1] 123" notices are also printed; keep the echoed pids only.
	lines := strings.Split(strings.TrimSpace(r.text), "\n")
	pids = pids[:0]
	for _, l := range lines {
		if pid, err := strconv.Atoi(l); err == nil {
			pids = append(pids, pid)
		}
	}
	if len(pids) != 3 {
		t.Fatalf("want 3 pids, got %q", r.text)
	}
	shellPid := n.sh.pid
	if r := call(t, n, "sleep 100", 0.3); !r.res.TimedOut {
		t.Fatalf("got %+v", r.res)
	}
	if !alive(pids[0]) {
		t.Fatalf("background job %d died with the timed-out command", pids[0])
	}
	stop(t, n)
	waitDead(t, append(pids, shellPid)...)
}

func stop(t *testing.T, n *Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if st := n.State(); st != node.Stopped {
		t.Fatalf("state after Stop = %s", st)
	}
}

func TestLargeOutputIsTruncated(t *testing.T) {
	n, _ := startNode(t, node.Spec{})
	call(t, n, "true", 0) // warm up
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a := map[string]any{"command": `head -c 10000000 /dev/zero | tr '\0' a; echo; echo tail`}
	raw, _ := json.Marshal(a)
	res, err := n.CallTool(context.Background(), &node.CallRequest{Tool: ToolName, Arguments: raw})
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	text := res.Content[0].(*mcp.TextContent).Text
	r := res.StructuredContent.(Result)
	wantTail := "\n[output truncated: 10.0 MB total, first 1.0 MiB kept; all of it is in " + r.OutputFile + "]\n"
	if !strings.HasSuffix(text, wantTail) || len(text) != 1<<20+len(wantTail) || strings.Trim(text[:1<<20], "a") != "" {
		t.Fatalf("text of %d bytes ends %q", len(text), text[max(0, len(text)-80):])
	}
	if !r.Truncated || r.OutputBytes != 10000006 || r.ExitCode != 0 || res.IsError {
		t.Fatalf("structured %+v isError %v", r, res.IsError)
	}
	// The whole output is kept in the file the result names.
	whole, err := os.ReadFile(r.OutputFile)
	if err != nil || len(whole) != 10000006 || !strings.HasSuffix(string(whole), "a\ntail\n") || strings.Trim(string(whole[:10000000]), "a") != "" {
		t.Fatalf("the output file %q holds %d bytes (%v), want all 10000006", r.OutputFile, len(whole), err)
	}
	// Everything the call allocated, garbage included, stays near the cap.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 6<<20 {
		t.Errorf("the call allocated %d bytes for 10 MB of output; want it bounded by the 1 MiB cap", alloc)
	}
}

func TestOutputCapOption(t *testing.T) {
	n, _ := startNode(t, node.Spec{Options: json.RawMessage(`{"output_cap": 10, "timeout": "2s"}`)})
	r := call(t, n, "echo 0123456789abcdef", 0)
	if r.text != "0123456789\n[output truncated: 17 bytes total, first 10 bytes kept; all of it is in "+r.res.OutputFile+"]\n" || !r.res.Truncated {
		t.Fatalf("got %q", r.text)
	}
	if b, err := os.ReadFile(r.res.OutputFile); string(b) != "0123456789abcdef\n" {
		t.Errorf("output file: %q, %v", b, err)
	}
	if !strings.Contains(n.tools[0].Description, "default 2s") {
		t.Errorf("the description does not show the node's timeout: %s", n.tools[0].Description)
	}
}

// TestShellExitStartsAFreshShell: a command that ends the shell (`exit 3`)
// gets a result that names it and says the state is lost, without the
// "exit" bash writes as its first line; the node stays usable and the next
// call runs in a fresh shell, in the folder the node starts in, and says
// so. The node used to wait in ERROR for a manual restart (issue 27).
func TestShellExitStartsAFreshShell(t *testing.T) {
	dir := t.TempDir()
	n, tr := startNode(t, node.Spec{Cwd: dir})
	sub := t.TempDir()
	call(t, n, "cd "+sub+"; X=kept; myfn() { :; }; sleep 300 & echo $! > "+filepath.Join(sub, "bg"), 0)
	old := n.sh.pid
	r := call(t, n, "echo bye; exit 3", 0)
	want := "bye\n[`echo bye; exit 3` ended the shell: bash exited with status 3; its state (folder, variables, functions, jobs) is lost, and the next call starts a fresh shell]\n"
	if !r.isErr || !r.res.ShellExited || r.res.ExitCode != 3 || r.text != want {
		t.Fatalf("got %q %+v; want %q", r.text, r.res, want)
	}
	if r := call(t, n, "exit 4", 0); !strings.HasPrefix(r.text, "[`exit 4` ended the shell: bash exited with status 4;") {
		t.Errorf("a bare exit's result: %q; want it to start with the status line", r.text)
	}
	info := n.Info()
	if info.State != node.Ready || !strings.Contains(fmt.Sprint(info.Details["shell_ended"]), "bash exited with status 4") {
		t.Fatalf("after the shell ended: state %s, details %v; want READY and why", info.State, info.Details)
	}
	r = call(t, n, `pwd; echo "x=${X-unset}"; type myfn >/dev/null 2>&1 || echo no-fn`, 0)
	if r.isErr || r.text != dir+"\nx=unset\nno-fn\n" || !strings.Contains(r.res.FreshShell, "bash exited with status 4") {
		t.Fatalf("the next call: %q %+v; want a fresh shell in %s that says why", r.text, r.res, dir)
	}
	if n.sh == nil || n.sh.pid == old {
		t.Fatal("no fresh shell")
	}
	if r := call(t, n, "echo again", 0); r.res.FreshShell != "" || r.text != "again\n" {
		t.Errorf("the call after the fresh shell's first: %q %+v", r.text, r.res)
	}
	// The dead shell's job ended with it.
	b, _ := os.ReadFile(filepath.Join(sub, "bg"))
	bgPid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	waitDead(t, old, bgPid)
	want2 := []string{"STARTING", "READY", "BUSY", "READY", "BUSY", "READY", "BUSY", "READY", "BUSY", "READY", "BUSY", "READY"}
	if got := tr.list(); !slices.Equal(got, want2) {
		t.Fatalf("transitions %v, want %v", got, want2)
	}
}

// TestStopWhileFreshShellStarts: a Stop racing the call that starts a
// fresh shell leaves no shell behind: the shell is either the one Stop
// closes or closed by the call that finds the node stopping.
func TestStopWhileFreshShellStarts(t *testing.T) {
	n, _ := startNode(t, node.Spec{})
	for range 5 {
		call(t, n, "exit 3", 0)
		done := make(chan error, 1)
		go func() {
			_, err := callErr(context.Background(), n, "echo hi", 0)
			done <- err
		}()
		stop(t, n)
		if err := <-done; err != nil && !errors.Is(err, node.ErrNotReady) {
			t.Fatalf("the call racing Stop: %v", err)
		}
		n.mu.Lock()
		sh := n.sh
		n.mu.Unlock()
		if sh != nil || n.State() != node.Stopped {
			t.Fatalf("after Stop: state %s, shell %v", n.State(), sh)
		}
		if err := n.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestShellKilledWhileIdleIsAnError(t *testing.T) {
	n, tr := startNode(t, node.Spec{})
	if err := syscall.Kill(n.sh.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitState(t, tr, node.Error, 1)
	if got := n.Info().Error; got != "bash was killed by signal 9 (killed)" {
		t.Fatalf("reason %q", got)
	}
}

// waitState waits, with a deadline, until the node has moved to state want
// n times in all.
func waitState(t *testing.T, tr *transitions, want node.State, n int) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		if count := strings.Count(" "+strings.Join(tr.list(), " ")+" ", " "+want.String()+" "); count >= n {
			return
		}
		select {
		case <-tr.ch:
		case <-timeout:
			t.Fatalf("state %s never came %d times; transitions %v", want, n, tr.list())
		}
	}
}

func TestStopDuringCall(t *testing.T) {
	n, tr := startNode(t, node.Spec{})
	r := call(t, n, "sleep 300 & echo $!", 0)
	bgPid, _ := strconv.Atoi(strings.TrimSpace(r.text[strings.LastIndexByte(strings.TrimSpace(r.text), '\n')+1:]))
	done := make(chan reply, 1)
	go func() {
		r, err := callErr(context.Background(), n, "echo started; sleep 100", 60)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	waitState(t, tr, node.Busy, 2) // the sleep call
	for len(descendantsOf(t, n.sh.pid)) < 2 {
		time.Sleep(5 * time.Millisecond) // until sleep 100 runs beside sleep 300
	}
	shellPid := n.sh.pid
	stop(t, n)
	r = <-done
	if !r.isErr || !strings.HasSuffix(r.text, "[the node was stopped; the shell's state is lost, restart the node]\n") {
		t.Fatalf("call during Stop: %q %+v", r.text, r.res)
	}
	waitDead(t, shellPid, bgPid)
}

func TestStateTransitions(t *testing.T) {
	n, tr := startNode(t, node.Spec{})
	call(t, n, "true", 0)
	call(t, n, "false", 0)
	stop(t, n)
	stop(t, n) // a second Stop is a no-op
	want := []string{"STARTING", "READY", "BUSY", "READY", "BUSY", "READY", "STOPPING", "STOPPED"}
	if got := tr.list(); !slices.Equal(got, want) {
		t.Fatalf("transitions %v, want %v", got, want)
	}
	if info := n.Info(); info.Calls != 2 || info.Failures != 1 || info.Tools != 1 {
		t.Errorf("info %+v", info)
	}
}

func TestOneCallAtATime(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	n, _ := startNode(t, node.Spec{Cwd: dir})
	started := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		raw, _ := json.Marshal(map[string]any{"command": "echo a1 >> log; echo go; sleep 0.3; echo a2 >> log"})
		_, err := n.CallTool(context.Background(), &node.CallRequest{Tool: ToolName, Arguments: raw, Observe: func(ev node.CallEvent) {
			once.Do(func() { close(started) })
		}})
		if err != nil {
			t.Error(err)
		}
	}()
	<-started
	// A caller that gives up while waiting its turn gets ctx's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := callErr(ctx, n, "echo never >> log", 0); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiter: %v", err)
	}
	call(t, n, "echo b1 >> log; echo b2 >> log", 0)
	wg.Wait()
	b, _ := os.ReadFile(log)
	if string(b) != "a1\na2\nb1\nb2\n" {
		t.Fatalf("log %q: calls overlapped", b)
	}
}

func TestSpecCwdEnvAndCommand(t *testing.T) {
	dir := t.TempDir()
	bash, err := exec.LookPath("bash")
	if err != nil {
		requireBash(t)
	}
	n, _ := startNode(t, node.Spec{Cwd: dir, Env: map[string]string{"NERVE_TEST_VAR": "from spec"}, Command: []string{bash, "-O", "extglob"}})
	if r := call(t, n, `pwd; echo "$NERVE_TEST_VAR"; shopt -q extglob && echo extglob`, 0); r.text != dir+"\nfrom spec\nextglob\n" {
		t.Fatalf("got %q", r.text)
	}
	if info := n.Info(); info.Summary != "bash in "+dir || info.Details["pid"] != n.sh.pid {
		t.Errorf("info %+v", info)
	}
}

func TestBadCallsAndSpecs(t *testing.T) {
	n, _ := startNode(t, node.Spec{})
	for _, tc := range []struct {
		tool, args string
		want       error
	}{
		{"run", `{"command": "ls"}`, node.ErrUnknownTool},
		{"bash", `{}`, node.ErrBadArgs},
		{"bash", `{"command": ""}`, node.ErrBadArgs},
		{"bash", `{"command": "ls", "timeout_s": 0}`, node.ErrBadArgs},
		{"bash", `{"command": "ls", "cmd": "x"}`, node.ErrBadArgs},
		{"bash", `{"command": 5}`, node.ErrBadArgs},
	} {
		_, err := n.CallTool(context.Background(), &node.CallRequest{Tool: tc.tool, Arguments: json.RawMessage(tc.args)})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s %s: got %v, want %v", tc.tool, tc.args, err, tc.want)
		}
	}
	tools, _ := n.ListTools(context.Background())
	again, _ := n.ListTools(context.Background())
	if len(tools) != 1 || tools[0] != again[0] || tools[0].Name != "bash" {
		t.Errorf("ListTools = %v, %v", tools, again)
	}

	for _, opts := range []string{`{"timeout": "soon"}`, `{"timeout": -1}`, `{"output_cap": -5}`, `{"timout": "1s"}`} {
		if _, err := New(node.Spec{ID: "x", Kind: Kind, Options: json.RawMessage(opts)}, node.Env{}); err == nil {
			t.Errorf("options %s accepted", opts)
		}
	}
	nn, _ := New(node.Spec{ID: "x", Kind: Kind, Cwd: "/no/such/folder"}, node.Env{})
	if err := nn.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "/no/such/folder") || nn.State() != node.Error {
		t.Errorf("start in a missing folder: %v, state %s", err, nn.State())
	}
	nn, _ = New(node.Spec{ID: "y", Kind: Kind}, node.Env{})
	if _, err := nn.CallTool(context.Background(), &node.CallRequest{Tool: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)}); !errors.Is(err, node.ErrNotReady) {
		t.Errorf("call before Start: %v", err)
	}
}

func TestMarkersCannotBeForged(t *testing.T) {
	n, _ := startNode(t, node.Spec{})
	// Printing the shell's variables and functions must not end the call
	// early or confuse the next one.
	r := call(t, n, "set; declare -f; echo done-listing", 0)
	if !strings.HasSuffix(r.text, "done-listing\n") || r.isErr {
		t.Fatalf("got ...%q", r.text[max(0, len(r.text)-200):])
	}
	if r := call(t, n, "echo next", 0); r.text != "next\n" {
		t.Fatalf("next call: %q", r.text)
	}
}

// BenchmarkEchoRoundTrip measures one `echo hi` call through the node.
func BenchmarkEchoRoundTrip(b *testing.B) {
	n, _ := startNode(b, node.Spec{})
	req := &node.CallRequest{Tool: ToolName, Arguments: json.RawMessage(`{"command": "echo hi"}`)}
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		res, err := n.CallTool(ctx, req)
		lat = append(lat, time.Since(t0))
		if err != nil || res.IsError {
			b.Fatalf("call: %v %v", err, res)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// callArgs calls the bash tool with arguments a, as a graph does.
func callArgs(t *testing.T, n *Node, a map[string]any) reply {
	t.Helper()
	raw, _ := json.Marshal(a)
	res, err := n.CallTool(context.Background(), &node.CallRequest{Tool: ToolName, Arguments: raw})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", raw, err)
	}
	return reply{text: res.Content[0].(*mcp.TextContent).Text, res: res.StructuredContent.(Result), isErr: res.IsError}
}

// Values given in args reach the command as $1, $2, … and are never read
// as code, whatever they hold; argv runs a program with no shell syntax at
// all. Both for this one call: the next sees no $1.
func TestArgsAndArgvAreData(t *testing.T) {
	dir := t.TempDir()
	n, _ := startNode(t, node.Spec{Cwd: dir})
	payloads := []string{"$(touch F)", "`touch F`", "x\ntouch F", "'; touch F #", "\"; touch F; \"", "", " spaced  out ", "a[$(touch F)]", "--output=F", strings.Repeat("é", 30000)}
	for _, p := range payloads {
		r := callArgs(t, n, map[string]any{"command": `printf '%s|' "$1" "$2"; echo "[$#]"`, "args": []string{p, "two"}})
		if want := p + "|two|[2]\n"; r.text != want || r.isErr {
			t.Errorf("args %q: got %q, want %q", firstN(p), firstN(r.text), firstN(want))
		}
		r = callArgs(t, n, map[string]any{"argv": []string{"printf", "%s|", p, "two"}})
		if want := p + "|two|"; r.text != want || r.isErr {
			t.Errorf("argv %q: got %q, want %q", firstN(p), firstN(r.text), firstN(want))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "F")); err == nil {
		t.Fatal("a value ran as code: F was created")
	}
	if r := call(t, n, `echo "[$#][$1]"`, 0); r.text != "[0][]\n" {
		t.Errorf("the next call sees the values: %q", r.text)
	}
	// argv names a program, never a builtin or a function.
	call(t, n, "greet() { echo hi; }", 0)
	for _, prog := range []string{"eval", "greet"} {
		if r := callArgs(t, n, map[string]any{"argv": []string{prog, "touch F"}}); !r.isErr || r.res.ExitCode != 127 {
			t.Errorf("argv [%s …]: got %q, want exit 127 (not found)", prog, r.text)
		}
	}
	for _, bad := range []string{`{"argv": []}`, `{"argv": ["ls"], "command": "ls"}`, `{"command": "ls", "args": ["a\u0000b"]}`} {
		if _, err := n.CallTool(context.Background(), &node.CallRequest{Tool: ToolName, Arguments: json.RawMessage(bad)}); !errors.Is(err, node.ErrBadArgs) {
			t.Errorf("%s: got %v, want ErrBadArgs", bad, err)
		}
	}
}

func firstN(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// A shell left with set -u still takes calls with and without values.
func TestArgsUnderSetU(t *testing.T) {
	n, _ := startNode(t, node.Spec{})
	call(t, n, "set -u", 0)
	if r := call(t, n, "echo ok", 0); r.text != "ok\n" || r.isErr {
		t.Errorf("a call with no values under set -u: %q", r.text)
	}
	if r := callArgs(t, n, map[string]any{"command": `echo "$1"`, "args": []string{"v"}}); r.text != "v\n" || r.isErr {
		t.Errorf("a call with a value under set -u: %q", r.text)
	}
}
