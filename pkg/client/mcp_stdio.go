package client

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/nerve-dev/nerve/pkg/api"
)

// MCPStdio opens a connection on which the daemon serves the session as
// an MCP server, speaking MCP's stdio transport (newline-delimited
// JSON-RPC): write requests to it, read answers and notifications from
// it, close it to end the MCP session. node, if set, serves that node
// alone with all its capabilities; names is "" or "qualified" (node.tool)
// or "llm" (node__tool). `nerve mcp serve` relays its stdin and stdout to
// this connection.
func (s *Session) MCPStdio(ctx context.Context, node, names string) (net.Conn, error) {
	return s.MCPStdioWith(ctx, api.MCPServe{Node: node, Names: names})
}

// MCPStdioWith is MCPStdio with every choice of `nerve mcp serve`: a
// tool filter, read-only tools, discovery and management tools.
func (s *Session) MCPStdioWith(ctx context.Context, o api.MCPServe) (net.Conn, error) {
	q := o.Query()
	target := base + s.path + "/mcp/stdio"
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", api.UpgradeMCPStdio)
	conn, err := s.c.dial(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if se := sshError(err); se != nil {
			return nil, se
		}
		return nil, fmt.Errorf("%w (%v): start it with `nerve daemon start`, or see `nerve daemon status`", ErrDaemonUnavailable, err)
	}
	// The handshake obeys ctx; the session that follows does not.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	resp, br, err := handshake(conn, req)
	if !stop() {
		err = ctx.Err()
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	s.c.checkVersion(resp)
	_ = conn.SetDeadline(time.Time{})
	return &bufferedConn{Conn: conn, r: br}, nil
}

// handshake sends req on conn and reads the daemon's answer: 101 and the
// reader holding whatever followed it, or the daemon's error.
func handshake(conn net.Conn, req *http.Request) (*http.Response, *bufio.Reader, error) {
	if err := req.Write(conn); err != nil {
		if se := sshError(err); se != nil {
			return nil, nil, se
		}
		return nil, nil, fmt.Errorf("%w: sending the MCP request: %v", ErrDaemonUnavailable, err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		if se := sshError(err); se != nil {
			return nil, nil, se
		}
		return nil, nil, fmt.Errorf("%w: reading the answer to the MCP request: %v", ErrProtocol, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		return resp, nil, responseError(resp)
	}
	if !strings.EqualFold(resp.Header.Get("Upgrade"), api.UpgradeMCPStdio) {
		return nil, nil, fmt.Errorf("%w: the daemon switched to %q, not %q (an older daemon? restart it with `nerve daemon stop`)", ErrProtocol, resp.Header.Get("Upgrade"), api.UpgradeMCPStdio)
	}
	return resp, br, nil
}

// bufferedConn is a connection whose first bytes may already sit in r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite tells the daemon no more requests come, when the connection
// can say so (a Unix socket); the answers still under way arrive.
func (c *bufferedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
