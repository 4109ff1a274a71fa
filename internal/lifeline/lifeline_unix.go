//go:build unix

package lifeline

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// script runs with $1 = group, $2 = session, $3 = marker, $4 = cgroup.
// `read x` succeeds only when the daemon wrote a line (Release); EOF means
// it died.
const script = `read x && exit 0
if [ -n "$4" ]; then
  if ! { echo 1 > "$4/cgroup.kill"; } 2>/dev/null; then
    { echo 0 > "$4/pids.max"; } 2>/dev/null
    for i in 1 2 3 4 5 6 7 8 9 10; do
      p=$(cat "$4/cgroup.procs" 2>/dev/null)
      [ -z "$p" ] && break
      kill -9 $p 2>/dev/null
    done
  fi
fi
[ "$1" -gt 1 ] && kill -9 -"$1" 2>/dev/null
if [ "$2" -gt 1 ]; then pkill -KILL -s "$2" 2>/dev/null || kill -9 -"$2" 2>/dev/null; fi
if [ -n "$3" ]; then
  for f in $(grep -lzxF -- "$3" /proc/[0-9]*/environ 2>/dev/null); do
    p=${f#/proc/}; p=${p%/environ}
    [ "$p" -gt 1 ] && [ "$p" != "$$" ] && kill -9 "$p" 2>/dev/null
  done
fi
exit 0`

// Lifeline is one running watcher. A nil *Lifeline is valid and does
// nothing: a lifeline that could not start leaves the child to Pdeathsig.
type Lifeline struct {
	pid  int
	w    *os.File
	done chan struct{} // closed once the sh is reaped
}

// Start starts a lifeline for t. It returns nil when /bin/sh cannot start.
func Start(t Target) *Lifeline {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	cmd := exec.Command("/bin/sh", "-c", script, "nerve-lifeline",
		strconv.Itoa(t.Group), strconv.Itoa(t.Session), t.Marker, t.Cgroup)
	cmd.Stdin = r
	// Its own group: stopping the child's group must not end the lifeline.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil
	}
	l := &Lifeline{pid: cmd.Process.Pid, w: w, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(l.done)
	}()
	return l
}

// Release tells the lifeline the child has been dealt with and waits for
// it to exit. Call it after stopping the child; it is safe on nil and once.
func (l *Lifeline) Release() {
	if l == nil {
		return
	}
	l.w.WriteString("done\n")
	l.w.Close()
	<-l.done
}

// Pid returns the lifeline's process id (0 for nil), for tests that check
// it is gone.
func (l *Lifeline) Pid() int {
	if l == nil {
		return 0
	}
	return l.pid
}
