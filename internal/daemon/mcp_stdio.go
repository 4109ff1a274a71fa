package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/mcpserver"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/session"
)

// handleMCPStdio serves the session (or ?node=NAME alone) as an MCP server
// on the request's own connection, switched to MCP's stdio framing: the
// server `nerve mcp serve` relays stdin and stdout to. Serving here rather
// than in that process saves a decode, an encode and a local API request
// per message. The connection ends when the client closes it, when the
// session goes away or when the daemon stops.
func (d *Daemon) handleMCPStdio(w http.ResponseWriter, r *http.Request) {
	if !headerHas(r.Header, "Connection", "upgrade") || !headerHas(r.Header, "Upgrade", api.UpgradeMCPStdio) {
		w.Header().Set("Upgrade", api.UpgradeMCPStdio)
		writeError(w, http.StatusUpgradeRequired, api.Error{Code: api.CodeBadRequest,
			Message: fmt.Sprintf("this route speaks MCP on the connection itself: send `Connection: Upgrade` and `Upgrade: %s` (`nerve mcp serve` does)", api.UpgradeMCPStdio)})
		return
	}
	q := r.URL.Query()
	id := q.Get("node")
	opts, err := mcpserver.ParseQuery(q)
	if err != nil {
		writeErr(w, badRequest(err))
		return
	}
	s, err := d.sessionOf(r, false)
	if err != nil {
		writeErr(w, err)
		return
	}
	if id != "" {
		if _, err := s.Node(id); err != nil {
			writeErr(w, err)
			return
		}
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		writeError(w, http.StatusInternalServerError, api.Error{Code: api.CodeInternal,
			Message: "this connection cannot be switched to MCP: use the streamable HTTP endpoint (`nerve mcp url`)"})
		return
	}
	// A daemon that is closing serves no new connection, and one that
	// counts this connection waits for it in Close.
	if !d.addRelay() {
		writeErr(w, session.ErrClosed)
		return
	}
	defer d.relays.Done()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(d.bgCtx, cancel)
	defer stop()

	b := relayBackend{SessionBackend: mcpserver.NewSessionBackend(s), s: s}
	opts.Node, opts.Version, opts.Logger = id, d.opts.Version, d.log.Named("mcp")
	srv := mcpserver.New(b, &opts)
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		// The session went away (or its events broke): end the
		// connection, and the client starts `nerve mcp serve` again.
		if err := srv.Run(ctx); err != nil {
			d.log.Info("MCP stdio server ended", zap.String("session", s.Name()), zap.String("node", id), zap.Error(err))
		}
		cancel()
	}()
	defer func() { <-runDone }()
	defer cancel()
	select {
	case <-srv.Ready():
	case <-ctx.Done():
		return
	}

	conn, rw, err := hj.Hijack()
	if err != nil {
		d.log.Warn("switching a connection to MCP", zap.Error(err))
		return
	}
	defer conn.Close()
	// The server's deadlines were for the HTTP request; a session lasts.
	_ = conn.SetDeadline(time.Time{})
	h := w.Header().Clone()
	h.Set("Connection", "Upgrade")
	h.Set("Upgrade", api.UpgradeMCPStdio)
	fmt.Fprintf(rw, "HTTP/1.1 %d %s\r\n", http.StatusSwitchingProtocols, http.StatusText(http.StatusSwitchingProtocols))
	_ = h.Write(rw)
	_, _ = rw.WriteString("\r\n")
	if err := rw.Flush(); err != nil {
		return
	}
	// Bytes the client sent right behind its request sit in rw. A message
	// nerve refuses (too big, nested too deep, not JSON-RPC) is answered
	// alone; the session lives on.
	t := mcpserver.StdioTransport(readCloser{rw.Reader, conn}, conn, d.log.Named("mcp"))
	if err := srv.MCP().Run(ctx, t); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		d.log.Info("MCP stdio session ended", zap.String("session", s.Name()), zap.String("node", id), zap.Error(err))
	}
}

// addRelay counts a connection served by handleMCPStdio, unless the
// daemon is closing. Close sets closing before it takes d.mu, so every
// relay counted here is one it waits for.
func (d *Daemon) addRelay() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closing.Load() {
		return false
	}
	d.relays.Add(1)
	return true
}

// relayBackend is the session's backend for a connection's server, which
// in node mode joins the node's attach group as `nerve mcp serve --node`
// always has: a REPL whose person has a call in flight is still offered
// the node's requests first, and the MCP client answers the others.
type relayBackend struct {
	*mcpserver.SessionBackend
	s *session.Session
}

// Attach joins node nodeID's attach group until ctx ends.
func (b relayBackend) Attach(ctx context.Context, nodeID string, a mcpserver.Attachment) error {
	leave := joinAttachGroup(b.SessionBackend, b.s, nodeID, serverMember{a: a, node: nodeID})
	<-ctx.Done()
	leave()
	return nil
}

// serverMember is an attach group's member that asks the MCP client of a
// connection's server directly. The SDK withdraws a request whose ctx
// ends (notifications/cancelled).
type serverMember struct {
	a    mcpserver.Attachment
	node string
}

func (serverMember) isCommander() bool { return false }

func (m serverMember) who() string {
	return "the MCP client of `nerve mcp serve --node " + m.node + "`"
}

func (m serverMember) resourceUpdated(uri string) { m.a.ResourceUpdated(uri) }

func (m serverMember) ask(ctx context.Context, kind string, params, result any, _ func(context.Context) string) error {
	switch kind {
	case api.AttachSample:
		p, ok1 := params.(*mcp.CreateMessageParams)
		out, ok2 := result.(*mcp.CreateMessageResult)
		if ok1 && ok2 {
			res, err := m.a.Sample(ctx, m.node, p)
			if err != nil {
				return err
			}
			*out = *res
			return nil
		}
	case api.AttachElicit:
		p, ok1 := params.(*mcp.ElicitParams)
		out, ok2 := result.(*mcp.ElicitResult)
		if ok1 && ok2 {
			res, err := m.a.Elicit(ctx, m.node, p)
			if err != nil {
				return err
			}
			*out = *res
			return nil
		}
	}
	return fmt.Errorf("an MCP client cannot be asked %q with %T", kind, params)
}

// readCloser reads from a buffered reader and closes the connection
// under it.
type readCloser struct {
	*bufio.Reader
	io.Closer
}

// headerHas reports whether the comma-separated header key lists token
// (case-insensitive).
func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), token) {
				return true
			}
		}
	}
	return false
}
