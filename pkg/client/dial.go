package client

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
)

// cmdConn is a connection that is a process: what is written goes to its
// stdin, what it prints on stdout is read, and its stderr is kept (the
// last few KiB) to say why it ended. SSH's connections are ssh processes.
// The pipes are the connection's own (os.Pipe), not exec's, so reading
// stdout never races the wait for the process, and they take deadlines.
type cmdConn struct {
	cmd    *exec.Cmd
	stdin  *os.File // the write end of the process's stdin
	stdout *os.File // the read end of its stdout
	stderr tail
	addr   cmdAddr

	// exited is closed once the process has been waited for; waitErr is
	// then its exit.
	exited  chan struct{}
	waitErr error

	got     atomic.Bool // a byte of stdout was read
	closing atomic.Bool
	once    sync.Once

	// ended turns the end of stdout (err, once the process has exited)
	// into the error the reader sees.
	ended func(c *cmdConn, err error) error
}

// exitGrace is how long a process whose stdout closed may take to exit
// before it is killed (ssh has closed its channel by then), and how long
// Close waits after SIGTERM.
const exitGrace = 3 * time.Second

// startCmd starts argv as a connection. The process is in a session of
// its own: a Ctrl-C at the terminal reaches nerve, which cancels what it
// sends, and not ssh, which would cut every connection at once.
func startCmd(argv []string, addr string, ended func(*cmdConn, error) error) (*cmdConn, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	c := &cmdConn{stdin: inW, stdout: outR, addr: cmdAddr(addr), exited: make(chan struct{}), ended: ended}
	c.cmd = exec.Command(argv[0], argv[1:]...)
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = inR, outW, &c.stderr
	// Whatever the process left holding stderr does not hold up its wait.
	c.cmd.WaitDelay = time.Second
	detachCmd(c.cmd)
	err = c.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

func (c *cmdConn) Read(p []byte) (int, error) {
	n, err := c.stdout.Read(p)
	if n > 0 {
		c.got.Store(true)
	}
	if err != nil && !c.closing.Load() && !errors.Is(err, os.ErrDeadlineExceeded) {
		err = c.end(err)
	}
	return n, err
}

func (c *cmdConn) Write(p []byte) (int, error) {
	n, err := c.stdin.Write(p)
	if err != nil && !c.closing.Load() && !errors.Is(err, os.ErrDeadlineExceeded) {
		// The process is gone (EPIPE): say why.
		err = c.end(err)
	}
	return n, err
}

// end waits for the process that closed its stdout (or its stdin) to
// exit, and reports why it did.
func (c *cmdConn) end(err error) error {
	select {
	case <-c.exited:
	case <-time.After(exitGrace):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
	return c.ended(c, err)
}

// CloseWrite closes the process's stdin: the far end reads its end, and
// what it still sends can be read.
func (c *cmdConn) CloseWrite() error { return c.stdin.Close() }

// Close closes both pipes and ends the process (SIGTERM, then SIGKILL),
// as docker's commandconn does: what was read is all the caller wanted.
// It is safe to call twice and returns once the process has exited.
func (c *cmdConn) Close() error {
	c.once.Do(func() {
		c.closing.Store(true)
		c.stdin.Close()
		c.stdout.Close()
		select {
		case <-c.exited:
			return
		default:
		}
		terminate(c.cmd.Process)
		select {
		case <-c.exited:
		case <-time.After(exitGrace):
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	})
	return nil
}

func (c *cmdConn) LocalAddr() net.Addr  { return c.addr }
func (c *cmdConn) RemoteAddr() net.Addr { return c.addr }

func (c *cmdConn) SetDeadline(t time.Time) error {
	return errors.Join(c.stdin.SetWriteDeadline(t), c.stdout.SetReadDeadline(t))
}
func (c *cmdConn) SetReadDeadline(t time.Time) error  { return c.stdout.SetReadDeadline(t) }
func (c *cmdConn) SetWriteDeadline(t time.Time) error { return c.stdin.SetWriteDeadline(t) }

// exitCode is the process's exit code, or -1 when a signal ended it (or
// it has not been waited for).
func (c *cmdConn) exitCode() int {
	select {
	case <-c.exited:
	default:
		return -1
	}
	if c.cmd.ProcessState == nil {
		return -1
	}
	return c.cmd.ProcessState.ExitCode()
}

// cmdAddr names the far end of a cmdConn (the host).
type cmdAddr string

func (a cmdAddr) Network() string { return "ssh" }
func (a cmdAddr) String() string  { return string(a) }

// tail keeps the last tailMax bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 4 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailMax {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailMax:]...)
	}
	return len(p), nil
}

// String returns what was kept, trimmed of blank lines at both ends.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}

var _ io.ReadWriteCloser = (*cmdConn)(nil)
