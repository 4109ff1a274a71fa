//go:build unix

package mcpnode

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// terminateGroup asks every process of group pgid to stop (SIGTERM).
func terminateGroup(pgid int) { syscall.Kill(-pgid, syscall.SIGTERM) }

// killGroup ends every process of group pgid (SIGKILL).
func killGroup(pgid int) { syscall.Kill(-pgid, syscall.SIGKILL) }

// lifelineScript kills process group $1 when its stdin reaches EOF without
// a line: the daemon, which alone holds the write end, died. The guard keeps
// a bad argument from ever meaning "every process" (kill -9 -1).
const lifelineScript = `read x || { [ "$1" -gt 1 ] && kill -9 -"$1"; }`

// lifeline is a tiny sh that ends a server's whole process group when the
// daemon dies, however it dies. Pdeathsig kills only the server itself;
// grandchildren that do not share its stdin (npx's node, a server's own
// helpers) would outlive a SIGKILLed daemon. The lifeline runs in its own
// group, so stop's SIGTERM to the server's group does not reach it.
type lifeline struct {
	pid  int
	w    *os.File
	done chan struct{} // closed once the sh is reaped
}

func startLifeline(pgid int) *lifeline {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	cmd := exec.Command("/bin/sh", "-c", lifelineScript, "nerve-lifeline", strconv.Itoa(pgid))
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil // Pdeathsig still covers the server itself
	}
	l := &lifeline{pid: cmd.Process.Pid, w: w, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(l.done)
	}()
	return l
}

// release tells the lifeline the group has been dealt with, and waits for
// it to exit.
func (l *lifeline) release() {
	if l == nil {
		return
	}
	l.w.WriteString("done\n")
	l.w.Close()
	<-l.done
}
