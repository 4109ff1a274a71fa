package mcpnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/childproc"
	"github.com/nerve-dev/nerve/internal/sendq"
)

// stderrLines is how many lines of a server's stderr a node keeps.
const stderrLines = 50

// process is a stdio MCP server: a child (see childproc: its own process
// group, tied to the daemon's life) whose stdin and stdout are the MCP
// stream, its stderr kept in a ring.
//
// The SDK's CommandTransport waits 5 s after closing stdin and signals only
// the direct child, so a server started through npx takes 5 s to stop and
// can leave the real server behind (see ARCHITECTURE.md). process ends the
// whole group in bounded steps instead.
type process struct {
	*childproc.Proc
	stdout    *lastBytes
	closeOnce sync.Once
	// writeMu keeps whole messages on stdin: the SDK's and the guard's
	// answers to requests it refused.
	writeMu sync.Mutex
	// answers holds the guard's answers until they are written: the
	// guard runs on the reader, which must not wait for a server that
	// does not read its stdin. shutdown closes it.
	answers *sendq.Queue[[]byte]
}

// startProcess starts argv in dir with env (which wins over nerve's own for
// the PATH lookup too).
func startProcess(argv, env []string, dir string, stopGrace, termGrace time.Duration) (*process, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("no command to run: give one after -- (e.g. `nerve node add mcp fs -- npx -y @modelcontextprotocol/server-filesystem /tmp`)")
	}
	cp, err := childproc.Start(argv, env, dir, &childproc.Options{StderrLines: stderrLines, StopGrace: stopGrace, TermGrace: termGrace})
	if err != nil {
		return nil, err
	}
	p := &process{Proc: cp, stdout: &lastBytes{r: cp.Stdout}}
	p.answers = sendq.New(answersBytes, func(batch []sendq.Item[[]byte]) {
		for _, it := range batch {
			_, _ = p.writeMessage(it.Value)
		}
	})
	return p, nil
}

// answersBytes bounds the guard's answers waiting for a server that does
// not read its stdin; beyond it they are dropped (the server's requests
// then go unanswered, as they would have been anyway).
const answersBytes = 1 << 20

// transport returns an mcp.Transport over the child's stdin and stdout.
// Closing the connection stops the child (see shutdown).
//
// A guard reads stdout before the SDK: a line over maxLine bytes (0: the
// default) or nested over MaxDepth fails only its own request, where the
// SDK would end the connection (see guard). The SDK's own bound stays as a
// backstop for a message spread over many lines, which the spec forbids.
func (p *process) transport(maxLine int, log *zap.Logger) mcp.Transport {
	if maxLine <= 0 {
		maxLine = DefaultMaxMessage
	}
	g := newGuard(p.stdout, maxLine, false, func(o overLimit) []byte {
		log.Warn("refused a message from the server", zap.String("reason", o.reason()), zap.ByteString("id", o.ID), zap.Bool("server_request", o.HasMethod))
		if !o.HasMethod {
			return o.errorResponse() // nil when its id is unknown: dropped
		}
		if resp := o.errorResponse(); resp != nil {
			// A request of the server's: tell it no, without blocking the
			// reader (a server may not read stdin while it writes).
			p.answer(append(resp, '\n'))
		}
		return nil
	}, nil, nil)
	return &mcp.IOTransport{Reader: readCloser{g, p.stdout}, Writer: stdinCloser{p}, MaxLineLength: 2*maxLine + 1<<20}
}

// answer writes msg to the server's stdin without waiting for it, unless
// the server is being shut down.
func (p *process) answer(msg []byte) {
	p.answers.Push(msg, len(msg))
}

// readCloser reads from a guard and closes the child's stdout.
type readCloser struct {
	io.Reader
	io.Closer
}

func (p *process) writeMessage(b []byte) (int, error) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	return p.Stdin.Write(b)
}

// stdinCloser is the write side of the stream; the SDK closes it last when
// the connection closes, and that is when the child must go.
type stdinCloser struct{ p *process }

func (s stdinCloser) Write(b []byte) (int, error) { return s.p.writeMessage(b) }
func (s stdinCloser) Close() error                { s.p.shutdown(); return nil }

// shutdown stops the child as the MCP spec asks for stdio — close its stdin,
// wait, SIGTERM, wait, SIGKILL — but signals the whole process group, and
// finally kills whatever of the group is left (grandchildren that outlived
// the leader). It is safe to call many times and concurrently; every call
// returns once the child is reaped.
func (p *process) shutdown() {
	p.closeOnce.Do(func() {
		p.Stop(context.Background())
		p.answers.Close() // stdin is closed: the writes fail at once
		// stderr may still hold the lines that explain an exit.
		wait(p.StderrDone(), 200*time.Millisecond)
		p.stdout.Close()
	})
	p.Stop(context.Background()) // returns once the child is reaped
}

// exitedByItself reports whether the child has exited without a signal
// from nerve, and how.
func (p *process) exitedByItself() (string, bool) {
	select {
	case <-p.Exited():
	default:
		return "", false
	}
	if p.Signalled() {
		return "", false
	}
	return describeExit(p.ExitState()), true
}

func describeExit(st *os.ProcessState) string {
	if st == nil {
		return "exited"
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("was killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exited with code %d", st.ExitCode())
}

// waitExited waits up to d for the child to exit by itself.
func (p *process) waitExited(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.Exited():
	case <-t.C:
	case <-ctx.Done():
	}
}

func wait(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

var _ io.WriteCloser = stdinCloser{}
