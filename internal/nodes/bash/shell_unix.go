//go:build unix

package bash

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nerve-dev/nerve/internal/childproc"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Timing of the interrupt sequence: SIGINT to the shell and the command,
// SIGINT again to the command every resignalEvery (a process caught between
// fork and exec misses the first), from escalateAfter on SIGKILL for the
// command every escalateEvery, and after giveUpAfter the shell is
// considered lost.
const (
	resignalEvery = 100 * time.Millisecond
	escalateAfter = 500 * time.Millisecond
	escalateEvery = 500 * time.Millisecond
	giveUpAfter   = 5 * time.Second
	startTimeout  = 10 * time.Second
	// drainAfterExit bounds how long a call keeps reading output once the
	// shell has exited (a background job may hold the pipe open forever).
	drainAfterExit = 100 * time.Millisecond
	chunkSize      = 32 << 10
	chunks         = 4
	// fdCtl and fdMark are where the shell keeps the control pipe and its
	// marker output: high numbers, out of the way of scripts' `exec 3>file`.
	fdCtl  = 60
	fdMark = 61
)

// tokenVar names the environment variable that marks every process the
// shell starts, so Stop finds the ones that left its process tree.
const tokenVar = "NERVE_BASH_NODE"

// shellConfig is what startShell needs.
type shellConfig struct {
	path string   // the bash binary
	args []string // extra arguments from the spec's command
	dir  string
	env  []string
	id   string // node id, for the token
}

// fromCall is what node.FromCallEnv holds in the command of call seq of
// the shell with token (tokenVar=VALUE): VALUE/seq.
func fromCall(token string, seq uint64) string {
	return strings.TrimPrefix(token, tokenVar+"=") + "/" + strconv.FormatUint(seq, 10)
}

// shell is one running bash process and the pipes nerve talks to it over.
// Calls are serialised by the node; the fields below the line are owned by
// the call in flight.
type shell struct {
	// proc is bash, run as every node's child is (see childproc): its
	// own session, Pdeathsig from a thread held for its life, a lifeline,
	// and its marker (token) on every process it starts.
	proc    *childproc.Proc
	pid     int
	path    string // the bash binary
	dir     string
	name    string   // "bash", for messages
	stdin   *os.File // the shell's script: one line per call
	ctl     *os.File // command payloads, read by __nerve_pre
	outR    *os.File // stdout+stderr of commands, and the markers
	errR    *os.File // the shell's own stderr: prompts, job notices
	token   string   // tokenVar=value
	data    chan []byte
	free    chan []byte
	done    chan struct{}   // closed by close: the reader stops
	exited  <-chan struct{} // closed once bash is reaped (proc.Exited)
	stderr  tail
	wg      sync.WaitGroup
	closeMu sync.Mutex
	closed  bool

	// ---- owned by the call in flight ----
	scan scanner
	seq  uint64
	// bgMu guards bg, which Stop also reads.
	bgMu sync.Mutex
	bg   map[int]bool // process groups of the shell's background jobs
}

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 2048

func (t *tail) Write(p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
}

// String returns the kept lines that say something: an interactive bash
// without a terminal writes a few harmless complaints.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var keep []string
	for line := range strings.SplitSeq(string(t.buf), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line == "exit" || strings.Contains(line, "Inappropriate ioctl for device") ||
			strings.Contains(line, "no job control in this shell") {
			continue
		}
		keep = append(keep, line)
	}
	if len(keep) > 5 {
		keep = keep[len(keep)-5:]
	}
	return strings.Join(keep, "; ")
}

func (t *tail) reset() {
	t.mu.Lock()
	t.buf = t.buf[:0]
	t.mu.Unlock()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// startShell starts bash and waits until it has run nerve's setup.
func startShell(ctx context.Context, cfg shellConfig) (_ *shell, err error) {
	s := &shell{
		name:  filepath.Base(cfg.path),
		data:  make(chan []byte),
		free:  make(chan []byte, chunks),
		done:  make(chan struct{}),
		bg:    map[int]bool{},
		token: tokenVar + "=" + cfg.id + ":" + randomHex(8),
	}
	for range chunks {
		s.free <- make([]byte, chunkSize)
	}
	tag := randomHex(16)
	s.scan.tag = []byte(tag)

	var files []*os.File // every pipe end, closed on failure
	pipe := func() (r, w *os.File) {
		if err != nil {
			return nil, nil
		}
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w
	}
	inR, inW := pipe()
	ctlR, ctlW := pipe()
	outR, outW := pipe()
	errR, errW := pipe()
	defer func() {
		if err != nil {
			for _, f := range files {
				f.Close()
			}
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("making pipes for bash: %w", err)
	}
	s.stdin, s.ctl, s.outR, s.errR = inW, ctlW, outR, errR

	// Interactive, so SIGINT returns bash to its prompt from anywhere (a
	// loop, a function), as Ctrl-C does in a terminal; without rc files so
	// the shell is the same for every user.
	args := append([]string{"--noprofile", "--norc", "--noediting"}, cfg.args...)
	args = append(args, "-i")
	// Empty prompts from the first line on (bash takes PS1 from its
	// environment); setup un-exports them.
	env := append(cfg.env[:len(cfg.env):len(cfg.env)], "PS1=", "PS2=")
	p, err := childproc.Start(append([]string{cfg.path}, args...), env, cfg.dir, &childproc.Options{
		// A session of its own: job control (`set -m`) in a background
		// group of nerve's terminal would stop bash with SIGTTOU/SIGTTIN.
		Setsid: true,
		Marker: s.token,
		Stdin:  inR, Stdout: outW, Stderr: errW,
		ExtraFiles: []*os.File{ctlR, outW}, // fds 3 and 4, moved to fdCtl and fdMark
	})
	// The child has its copies; ours would keep the pipes open forever.
	for _, f := range []*os.File{inR, ctlR, outW, errW} {
		f.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", cfg.path, err)
	}
	s.proc, s.pid, s.path, s.dir = p, p.Pid(), cfg.path, cfg.dir
	s.exited = p.Exited()

	s.wg.Add(2)
	go s.readOutput()
	go s.readStderr()

	if err = s.setup(ctx, tag); err != nil {
		s.close(context.Background())
		return nil, err
	}
	s.stderr.reset()
	return s, nil
}

// readOutput moves the output pipe into s.data in chunks from s.free, so
// output is never buffered without bound: when no call reads, the pipe
// fills and writers block, as on a terminal.
func (s *shell) readOutput() {
	defer s.wg.Done()
	for {
		var buf []byte
		select {
		case buf = <-s.free:
		case <-s.done:
			return
		}
		n, err := s.outR.Read(buf[:cap(buf)])
		if n > 0 {
			select {
			case s.data <- buf[:n]:
			case <-s.done:
				return
			}
		} else {
			s.free <- buf
		}
		if err != nil {
			close(s.data) // EOF: every writer is gone
			return
		}
	}
}

func (s *shell) readStderr() {
	defer s.wg.Done()
	buf := make([]byte, 1024)
	for {
		n, err := s.errR.Read(buf)
		s.stderr.Write(buf[:n])
		if err != nil {
			return
		}
	}
}

// escapeForPrintf writes tag as printf escapes: the shell keeps only this
// form in its variables, so `set` or `declare -p` cannot print the tag.
func escapeForPrintf(tag string) string {
	var b strings.Builder
	for i := 0; i < len(tag); i++ {
		fmt.Fprintf(&b, `\x%02x`, tag[i])
	}
	return b.String()
}

// setup defines nerve's helpers in the shell and waits for its first sync.
//
// __nerve_pre reads one command (its length in bytes, then the bytes, with
// LC_ALL=C so read -N counts bytes) and its values (each length, then the
// bytes) from the control pipe and prints the start marker; the call line
// makes the values the positional parameters, $1 $2 …, and evals the
// command at top level (so `declare` makes globals) with stdin from
// /dev/null and stderr on stdout: the values reach the command as data the
// shell expands, never as program text; it exports node.FromCallEnv as
// the shell's token and the call's seq (fromCall), which a `nerve call`
// in the command sends back. __nerve_post prints the
// background jobs and the end marker with the status; the values are
// cleared after the call.
func (s *shell) setup(ctx context.Context, tag string) error {
	t := escapeForPrintf(tag)
	script := fmt.Sprintf(`exec %[1]d<&3 %[2]d>&4 3<&- 4>&-
set -m +H +o history
unset HISTFILE PROMPT_COMMAND MAILCHECK
export -n PS1 PS2
PS0= PS4='+ '
__nerve_t='%[3]s'
__nerve_pre() { IFS=' ' read -r -u %[1]d __nerve_seq __nerve_len __nerve_n && IFS= LC_ALL=C read -r -u %[1]d -N "$__nerve_len" __nerve_cmd && __nerve_a=() && while (( __nerve_n-- > 0 )); do IFS= read -r -u %[1]d __nerve_len && IFS= LC_ALL=C read -r -u %[1]d -N "$__nerve_len" __nerve_v && __nerve_a+=("$__nerve_v") || return; done && export %[4]s="$%[5]s/$__nerve_seq" && printf "${__nerve_t}S %%s\n" "$__nerve_seq" >&%[2]d; }
__nerve_post() { unset __nerve_cmd __nerve_a __nerve_v; printf "${__nerve_t}J" >&%[2]d; jobs -p >&%[2]d; printf "${__nerve_t}E %%s %%s\n" "$__nerve_seq" "$1" >&%[2]d; }
__nerve_sync() { printf "${__nerve_t}Y %%s\n" "$1" >&%[2]d; }
__nerve_sync 0
`, fdCtl, fdMark, t, node.FromCallEnv, tokenVar)
	deadline := time.Now().Add(startTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := s.writeStdin(script, deadline); err != nil {
		return s.startFailure(fmt.Errorf("sending setup to %s: %w", s.name, err))
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	ready := false
	for !ready {
		select {
		case buf, ok := <-s.data:
			if !ok {
				return s.startFailure(errors.New("output closed"))
			}
			s.scan.feed(buf, func([]byte) {}, func(m marker) {
				if m.kind == markSync && m.seq == 0 {
					ready = true
				}
			})
			s.free <- buf
		case <-s.exited:
			return s.startFailure(errors.New("it exited"))
		case <-timer.C:
			return s.startFailure(fmt.Errorf("no answer within %s", startTimeout))
		case <-ctx.Done():
			return fmt.Errorf("starting %s: %w", s.name, ctx.Err())
		}
	}
	return nil
}

func (s *shell) startFailure(err error) error {
	msg := fmt.Sprintf("%s did not start: %v", s.name, err)
	select {
	case <-s.exited:
		msg = fmt.Sprintf("%s did not start: %s", s.name, s.exitReason())
	default:
	}
	if t := s.stderr.String(); t != "" {
		msg += ": " + t
	}
	return errors.New(msg + " (is it bash? check the node's command)")
}

// exitReason says how the shell ended; valid after s.exited is closed.
func (s *shell) exitReason() string {
	st := s.proc.ExitState()
	if st == nil {
		return s.name + " ended"
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("%s was killed by signal %d (%s)", s.name, int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("%s exited with status %d", s.name, st.ExitCode())
}

// exitCode is the shell's exit status, 128+n for a signal n; valid after
// s.exited is closed.
func (s *shell) exitCode() int {
	st := s.proc.ExitState()
	if st == nil {
		return 0
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

// deathReason is exitReason plus the shell's last words on stderr.
func (s *shell) deathReason() string {
	r := s.exitReason()
	if t := s.stderr.String(); t != "" {
		r += ": " + t
	}
	return r
}

func (s *shell) writeStdin(text string, deadline time.Time) error {
	_ = s.stdin.SetWriteDeadline(deadline)
	_, err := s.stdin.WriteString(text)
	return err
}

// callLine is what the shell reads for each call: two lines, because an
// interactive bash abandons the rest of a line after some errors (`exit 1
// 2`: too many arguments, `${X?unset}`), and the end marker must come.
//
// ${a[@]+"${a[@]}"} is "${a[@]}" that bash before 4.4 accepts under set -u
// when a is empty.
const callLine = "__nerve_pre && { set -- ${__nerve_a[@]+\"${__nerve_a[@]}\"}; eval \"$__nerve_cmd\"; } </dev/null 2>&1\n__nerve_post $?; set --\n"

func (s *shell) send(seq uint64, command string, values []string, deadline time.Time) error {
	if err := s.writeStdin(callLine, deadline); err != nil {
		return err
	}
	msg := make([]byte, 0, 48+len(command))
	msg = strconv.AppendUint(msg, seq, 10)
	msg = append(msg, ' ')
	msg = strconv.AppendInt(msg, int64(len(command)), 10)
	msg = append(msg, ' ')
	msg = strconv.AppendInt(msg, int64(len(values)), 10)
	msg = append(msg, '\n')
	msg = append(msg, command...)
	for _, v := range values {
		msg = strconv.AppendInt(msg, int64(len(v)), 10)
		msg = append(msg, '\n')
		msg = append(msg, v...)
	}
	_ = s.ctl.SetWriteDeadline(deadline)
	_, err := s.ctl.Write(msg)
	return err
}

// sync asks the shell to print a sync marker once it is at its prompt.
func (s *shell) sync(seq uint64) {
	_ = s.writeStdin("__nerve_sync "+strconv.FormatUint(seq, 10)+"\n", time.Now().Add(time.Second))
}

// abortReason says why a call is being ended early.
type abortReason int

const (
	notAborted abortReason = iota
	byTimeout
	byInterrupt
	byCancel
)

// run runs one command and returns what it printed and how it ended. A
// timeout, an interrupt or ctx ending stop the command and wait, bounded,
// until the shell is back at its prompt; with ctx ended run returns ctx's
// error as well.
//
// Output past outCap is counted and, when spool is set, kept whole in a
// file in that folder (oc.file), so that nothing a command printed is lost.
func (s *shell) run(ctx context.Context, command string, values []string, timeout time.Duration, outCap int64, spool string, emit func(string), intr <-chan struct{}) (outcome, error) {
	s.seq++
	c := &inFlight{s: s, seq: s.seq, emit: emit,
		out: capBuffer{max: int(min(outCap, int64(int(^uint(0)>>1)))), spool: spool}}
	defer c.stopEscalating()
	err := c.wait(ctx, command, values, timeout, intr)
	c.oc.out, c.oc.total = c.out.buf, c.out.total
	c.oc.file, c.oc.fileErr = c.out.closeSpill()
	return c.oc, err
}

// inFlight is one command running on a shell: its output so far, the
// markers seen, and how far an abort of it has gone. Only run's goroutine
// uses it.
type inFlight struct {
	s    *shell
	seq  uint64
	out  capBuffer
	emit func(string)
	oc   outcome

	started bool   // the command's start marker came
	inJobs  bool   // the text now is `jobs -p`'s list
	jobs    []byte // that list
	done    bool   // the call is over

	reason   abortReason
	aborting bool // SIGINT sent, the shell not yet back at its prompt
	abortAt  time.Time
	synced   bool // the shell answered a sync: only leftovers remain
	lastKill time.Time
	syncFrom uint64       // first sync seq sent by this call
	escalate *time.Ticker // while an abort is under way
}

// wait sends the command and reads the shell until the call is over: the
// end marker, an abort that brought the shell back, or the shell's end.
func (c *inFlight) wait(ctx context.Context, command string, values []string, timeout time.Duration, intr <-chan struct{}) error {
	s := c.s
	if err := s.send(c.seq, command, values, time.Now().Add(max(timeout, time.Second))); err != nil {
		// A half-sent command would leave the shell reading the rest as its
		// next one: this shell is lost either way.
		c.oc.died = s.kill(fmt.Sprintf("could not send the command to %s: %v", s.name, err))
		return nil
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	text, mark := c.text, c.mark // made once, not per read
	ctxDone := ctx.Done()
	var err error
	for !c.done {
		select {
		case buf, ok := <-s.data:
			if !ok {
				c.outputClosed()
				return nil
			}
			s.scan.feed(buf, text, mark)
			s.free <- buf
		case <-s.exited:
			s.drain(text, mark)
			if !c.done || c.aborting {
				c.oc.died = s.deathReason()
			}
			return nil
		case <-timer.C:
			c.startAbort(byTimeout)
		case <-intr:
			c.startAbort(byInterrupt)
		case <-ctxDone:
			ctxDone = nil
			err = ctx.Err()
			c.startAbort(byCancel)
		case <-c.escalateC():
			if killed := c.escalateAbort(); killed {
				return err
			}
		}
	}
	c.finish(timeout)
	return err
}

// outputClosed: EOF on the output, the shell is gone or going (or closed
// its own output, which leaves it useless).
func (c *inFlight) outputClosed() {
	s := c.s
	select {
	case <-s.exited:
	case <-time.After(time.Second):
		s.killAll()
		<-s.exited
	}
	c.oc.died = s.deathReason()
}

// text takes output of the command (or of `jobs -p` after it).
func (c *inFlight) text(b []byte) {
	if c.inJobs {
		if len(c.jobs) < 4096 {
			c.jobs = append(c.jobs, b...)
		}
		return
	}
	if kept := c.out.write(b); len(kept) > 0 && c.emit != nil {
		c.emit(string(kept))
	}
}

// mark takes a marker the shell printed.
func (c *inFlight) mark(m marker) {
	c.inJobs = false
	switch {
	case m.kind == markJobs:
		c.inJobs, c.jobs = true, c.jobs[:0]
	case m.seq < c.seq:
		// Left over from an earlier call's interrupt: what came
		// before it was that call's.
		c.out.reset()
	case m.kind == markStart && m.seq == c.seq:
		c.started = true
		if c.reason != notAborted && !c.aborting {
			c.abort()
		}
	case m.kind == markEnd && m.seq == c.seq:
		c.oc.exit = m.status
		c.s.noteJobs(c.jobs)
		c.done = !c.aborting
	case m.kind == markSync && c.aborting && m.seq >= c.syncFrom && !c.synced:
		// The shell is at its prompt. A process forked just as the
		// SIGINT came may have missed it and still run: end it too.
		c.synced = true
		if c.s.signalCommand(syscall.SIGINT) == 0 {
			c.done = true
		}
	}
}

// startAbort begins ending the call for reason r (the first reason wins):
// at once if the command has started, else when its start marker comes or
// the first escalation tick, whichever is first.
func (c *inFlight) startAbort(r abortReason) {
	if c.reason != notAborted {
		return
	}
	c.reason = r
	c.escalate = time.NewTicker(resignalEvery)
	if c.started {
		c.abort()
	}
}

// abort sends SIGINT to the shell and the command, and a sync line the
// shell reads once it is back at its prompt.
func (c *inFlight) abort() {
	s := c.s
	c.aborting, c.abortAt = true, time.Now()
	_ = syscall.Kill(s.pid, syscall.SIGINT)
	s.signalCommand(syscall.SIGINT)
	s.seq++
	c.syncFrom = s.seq
	s.sync(s.seq)
}

// escalateC ticks while an abort is under way (nil, never, before).
func (c *inFlight) escalateC() <-chan time.Time {
	if c.escalate == nil {
		return nil
	}
	return c.escalate.C
}

func (c *inFlight) stopEscalating() {
	if c.escalate != nil {
		c.escalate.Stop()
	}
}

// escalateAbort is one tick of an abort: SIGINT again, then SIGKILL for
// what ignores it, until giveUpAfter, when the shell is killed (killed
// reports that).
func (c *inFlight) escalateAbort() (killed bool) {
	s := c.s
	if !c.aborting {
		c.abort() // no start marker yet: interrupt anyway
		return false
	}
	since := time.Since(c.abortAt)
	if c.synced {
		sig := syscall.SIGINT
		if since >= escalateAfter {
			sig = syscall.SIGKILL
		}
		if s.signalCommand(sig) == 0 {
			c.done = true
			return false
		}
	}
	switch {
	case since > giveUpAfter:
		c.oc.died = s.kill(fmt.Sprintf("%s did not return to its prompt within %s of an interrupt and was killed", s.name, giveUpAfter))
		return true
	case c.synced:
	case since < escalateAfter:
		s.signalCommand(syscall.SIGINT)
	case time.Since(c.lastKill) >= escalateEvery:
		// Something ignores SIGINT: kill the command's
		// processes and ask the shell again.
		c.lastKill = time.Now()
		s.signalCommand(syscall.SIGKILL)
		_ = syscall.Kill(s.pid, syscall.SIGINT)
		s.seq++
		s.sync(s.seq)
	}
	return false
}

// finish tidies the output of a call that ended and says why it ended.
func (c *inFlight) finish(timeout time.Duration) {
	c.out.dropNoise()
	// The end marker may come after an abort too (it is on a line of its
	// own, which the shell reads once SIGINT sent it to its prompt).
	if !c.aborting {
		return
	}
	// An interactive bash prints a newline when SIGINT sends it to
	// its prompt (the line a terminal moves to after ^C); here it
	// would only be an empty line at the end of the output.
	if b := c.out.buf; int64(len(b)) == c.out.total && len(b) > 0 && b[len(b)-1] == '\n' && (len(b) == 1 || b[len(b)-2] == '\n') {
		c.out.buf = b[:len(b)-1]
		c.out.total--
	}
	switch c.reason {
	case byTimeout:
		c.oc.timedOut = timeout
	default:
		c.oc.intr = true
	}
}

// drain reads what is left of the output after the shell exited, for a
// bounded time: a background job may keep the pipe open.
func (s *shell) drain(text func([]byte), mark func(marker)) {
	t := time.NewTimer(drainAfterExit)
	defer t.Stop()
	for {
		select {
		case buf, ok := <-s.data:
			if !ok {
				return
			}
			s.scan.feed(buf, text, mark)
			s.free <- buf
		case <-t.C:
			return
		}
	}
}

// noteJobs records the process groups of the background jobs `jobs -p`
// listed: interrupts spare them, Stop ends them.
func (s *shell) noteJobs(list []byte) {
	bg := map[int]bool{}
	for _, f := range bytes.Fields(list) {
		if pgid, err := strconv.Atoi(string(f)); err == nil && pgid > 1 {
			bg[pgid] = true
		}
	}
	s.bgMu.Lock()
	s.bg = bg
	s.bgMu.Unlock()
}

// signalCommand signals the command in the foreground: every process below
// the shell except the background jobs of earlier calls. It returns how
// many processes it signalled.
func (s *shell) signalCommand(sig syscall.Signal) int {
	procs, err := childproc.ProcessTable()
	if err != nil {
		return 0
	}
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	ks := childproc.NewKillSet(s.pid)
	n := 0
	for _, p := range childproc.Descendants(procs, s.pid) {
		if !s.bg[p.Pgid] {
			ks.Add(p)
			n++
		}
	}
	ks.Signal(sig)
	return n
}

// kill ends the shell and everything it started and returns why, for a
// shell that cannot be trusted any more.
func (s *shell) kill(why string) string {
	s.killAll()
	return why
}

// killAll sends SIGKILL to every process the shell started (its process
// tree, its jobs' process groups, and processes that carry its token after
// leaving the tree), then to the shell's own group (childproc.KillAll).
func (s *shell) killAll() {
	s.bgMu.Lock()
	bg := make([]int, 0, len(s.bg))
	for g := range s.bg {
		bg = append(bg, g)
	}
	s.bgMu.Unlock()
	s.proc.KillAll(bg...)
}

// close kills the shell and everything it started, then releases the pipes
// and waits for the goroutines. It is safe to call more than once.
func (s *shell) close(ctx context.Context) error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.killAll()
	var err error
	select {
	case <-s.exited:
		// Reaped: Stop only sweeps once more and releases the lifeline.
		s.proc.Stop(ctx)
	case <-ctx.Done():
		// The lifeline stays: it ends bash's session if the daemon dies.
		err = fmt.Errorf("waiting for %s to exit: %w", s.name, ctx.Err())
	}
	close(s.done)
	for _, f := range []*os.File{s.stdin, s.ctl, s.outR, s.errR} {
		f.Close()
	}
	if err == nil {
		s.wg.Wait()
	}
	return err
}

// capBuffer keeps the first max bytes written and counts the rest. With
// spool set, once the output passes max all of it (the kept part too) goes
// to a file in that folder, up to maxSpill bytes.
type capBuffer struct {
	buf   []byte
	max   int
	total int64

	spool    string
	spill    *os.File
	spilled  int64
	spillErr error
}

// maxSpill bounds the file that keeps a cut output whole.
const maxSpill = 1 << 30

// write keeps what fits and returns it.
func (c *capBuffer) write(p []byte) []byte {
	c.total += int64(len(p))
	room := c.max - len(c.buf)
	if room < len(p) && c.spool != "" {
		c.spillAll(p)
	} else if c.spill != nil {
		c.toSpill(p)
	}
	if room <= 0 {
		return nil
	}
	p = p[:min(room, len(p))]
	if need := len(c.buf) + len(p); need > cap(c.buf) {
		// Grow by doubling, but never past max: memory stays bounded.
		nb := make([]byte, len(c.buf), min(max(2*cap(c.buf), need, 512), c.max))
		copy(nb, c.buf)
		c.buf = nb
	}
	c.buf = append(c.buf, p...)
	return p
}

func (c *capBuffer) reset() { c.buf, c.total = c.buf[:0], 0 }

// spillAll opens the spill file on the first write past max, with what was
// kept so far, then appends p.
func (c *capBuffer) spillAll(p []byte) {
	if c.spill == nil && c.spillErr == nil {
		if err := os.MkdirAll(c.spool, 0o700); err != nil {
			c.spillErr = err
			return
		}
		f, err := os.CreateTemp(c.spool, "output-*.txt")
		if err != nil {
			c.spillErr = err
			return
		}
		c.spill = f
		c.toSpill(c.buf)
	}
	c.toSpill(p)
}

func (c *capBuffer) toSpill(p []byte) {
	if c.spill == nil || c.spillErr != nil {
		return
	}
	p = p[:min(int64(len(p)), max(0, maxSpill-c.spilled))]
	n, err := c.spill.Write(p)
	c.spilled += int64(n)
	if err != nil {
		c.spillErr = err
	}
}

// closeSpill closes the spill file and returns its path (or why the whole
// output could not be kept).
func (c *capBuffer) closeSpill() (string, error) {
	if c.spill == nil {
		return "", c.spillErr
	}
	if err := c.spill.Close(); err != nil && c.spillErr == nil {
		c.spillErr = err
	}
	if c.spilled < c.total && c.spillErr == nil {
		c.spillErr = fmt.Errorf("the file keeps the first %s only", formatSize(maxSpill, true))
	}
	return c.spill.Name(), c.spillErr
}

// tcsetattrNoise is what an interactive bash without a terminal prints when
// a job dies of a signal or SIGINT returns it to its prompt: "bash: [123: 2 (255)] tcsetattr:
// Inappropriate ioctl for device". It says nothing about the command.
var tcsetattrNoise = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^[^\n]*: \[\d+: \d+ \(\d+\)\] tcsetattr: Inappropriate ioctl for device\n`)
}) // compiled on first use, not at every start

// dropNoise removes tcsetattrNoise from the kept output.
func (c *capBuffer) dropNoise() {
	if !bytes.Contains(c.buf, []byte("tcsetattr")) {
		return
	}
	clean := tcsetattrNoise().ReplaceAll(c.buf, nil)
	c.total -= int64(len(c.buf) - len(clean))
	c.buf = append(c.buf[:0], clean...)
}
