package mcpnode

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/syncs"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Hung stdio servers: a server that stops answering but keeps running
// would stay READY until a call timed out. While it is idle nerve pings
// it every DefaultPingInterval; one that does not answer within the ping
// timeout is ended and the node goes ERROR, from where `--restart
// on-failure` brings it back. A server that answers the first ping with
// "method not found" is not pinged again; option ping "off" turns pinging
// off, a duration sets the interval.
//
// MCP 2026-07-28 has no ping: a server of that era is asked
// server/discover instead, the one request every such server answers,
// which costs it no state and runs no tool.
const (
	DefaultPingInterval = 30 * time.Second
	defaultPingTimeout  = 10 * time.Second
)

// pingInterval is the node's ping option: its interval, 0 for off.
func pingInterval(opt string) (time.Duration, error) {
	switch opt {
	case "":
		return DefaultPingInterval, nil
	case "off", "no", "false":
		return 0, nil
	}
	d, err := time.ParseDuration(opt)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("ping %q: use a duration such as 30s, or off for a server that does not answer ping", opt)
	}
	return d, nil
}

// pinger pings the server of c while it is idle until c ends. Stdio only:
// a remote server that stops answering fails the next call by itself.
func (n *Node) pinger(c *conn) {
	every := n.cfg.pingInterval
	if c.proc == nil || every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		if n.InFlight() > 0 || n.State() != node.Ready {
			continue // a call is running: its own timeout watches the server
		}
		ctx, cancel := context.WithTimeout(c.ctx, n.cfg.pingTimeout)
		err := ping(ctx, c.cs)
		timedOut := ctx.Err() != nil && c.ctx.Err() == nil
		cancel()
		var werr *jsonrpc.Error
		switch {
		case err == nil:
		case errors.As(err, &werr) && werr.Code == jsonrpc.CodeMethodNotFound:
			n.log.Info("the server does not answer ping; not pinging it", zap.Error(err))
			c.noPing.Store(true)
			return
		case errors.As(err, &werr):
			// It answered, if with an error: it is alive.
		case timedOut:
			n.hung(c)
			return
		default:
			return // the connection ended; the watcher reports it
		}
	}
}

// ping asks the server of cs whether it is there: MCP ping, or for a
// server of 2026-07-28, which has none, server/discover.
func ping(ctx context.Context, cs *mcp.ClientSession) error {
	if !isModern(cs) {
		return cs.Ping(ctx, nil)
	}
	_, err := mcp.CallCustomMethod[*mcp.DiscoverParams, *mcp.DiscoverResult](ctx, cs, "server/discover", &mcp.DiscoverParams{})
	return err
}

// hung ends a server that did not answer ping: the node goes ERROR with
// the reason and, with restart on-failure, comes back.
func (n *Node) hung(c *conn) {
	what := "ping"
	if isModern(c.cs) {
		what = "server/discover (its liveness check: MCP 2026-07-28 has no ping)"
	}
	msg := fmt.Sprintf("the server stopped answering: no reply to %s within %v while idle, though its process (pid %d) was still running; nerve ended it (`nerve node restart %s` starts it again; option ping off for a server that does not answer ping)",
		what, n.cfg.pingTimeout, c.proc.Pid(), n.ID())
	msg += c.proc.StderrTail(10)
	c.closing.Store(true) // the fault is reported here, not by the watcher
	if n.Machine.ToIf(node.Error, msg, node.Ready, node.Busy) != nil {
		return // stopped or failed meanwhile
	}
	n.log.Warn("mcp server hung", zap.String("reason", msg))
	c.broken.Store(true)
	c.cancel()
	c.proc.shutdown()
	n.scheduleRestart(c)
}

// pingInfo adds what pinging does to a node's Info details.
func (n *Node) pingInfoLocked(d map[string]any) {
	syncs.AssertRLocked(&n.mu)
	switch {
	case n.server.Transport != "stdio":
	case n.cfg.pingInterval <= 0:
		d["ping"] = "off"
	case n.conn != nil && n.conn.noPing.Load():
		d["ping"] = "off (the server does not answer ping)"
	default:
		d["ping"] = n.cfg.pingInterval.String()
	}
}
