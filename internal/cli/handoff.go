package cli

import (
	"context"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"

	"github.com/nerve-dev/nerve/internal/front"
)

// frontVars reads, once, what the front (cmd/nerve) passed this program
// in the environment, and removes it so that nothing this program starts
// (the daemon, a node's process) inherits it: the front's path, and a
// `nerve call` it began and hands over.
var frontVars = sync.OnceValues(func() (exe, handoff string) {
	exe, handoff = os.Getenv(front.EnvExe), os.Getenv(front.EnvHandoff)
	if exe != "" {
		os.Unsetenv(front.EnvExe)
	}
	if handoff != "" {
		os.Unsetenv(front.EnvHandoff)
	}
	return exe, handoff
})

// selfExe is the program people run as nerve: the front that started this
// program, or this program when it was run on its own. The daemon is
// started with it, and MCP client configs name it.
func selfExe() (string, error) {
	if exe, _ := frontVars(); exe != "" {
		return exe, nil
	}
	return os.Executable()
}

// callHandoff is a `nerve call` the front sent and hands over: the first
// connection this program makes is the front's, its answer read from the
// start (the request is not sent again), and the first skip stream lines,
// which the front already showed, are not shown again.
type callHandoff struct {
	conn        net.Conn
	skip        int
	interrupted bool // a signal ended the call in the front
	used        atomic.Bool
}

// dial returns the front's connection the first time, then connects to
// socket.
func (h *callHandoff) dial(socket string) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		if h.conn != nil && h.used.CompareAndSwap(false, true) {
			return h.conn, nil
		}
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}
}

// replayConn is the front's connection: reads return the bytes the front
// read first, then what comes after; writes are dropped, the request
// having been sent. Reads wait for the first write: an HTTP transport
// takes bytes that arrive before it sent a request for an unsolicited
// answer, and drops the connection.
type replayConn struct {
	net.Conn
	r       io.Reader
	kept    *os.File
	once    sync.Once
	written chan struct{}
}

func newReplayConn(conn net.Conn, kept *os.File) *replayConn {
	return &replayConn{Conn: conn, r: io.MultiReader(kept, conn), kept: kept, written: make(chan struct{})}
}

func (c *replayConn) Read(p []byte) (int, error) {
	<-c.written
	return c.r.Read(p)
}

func (c *replayConn) Write(p []byte) (int, error) {
	c.once.Do(func() { close(c.written) })
	return len(p), nil
}

func (c *replayConn) Close() error {
	c.once.Do(func() { close(c.written) })
	c.kept.Close()
	return c.Conn.Close()
}
