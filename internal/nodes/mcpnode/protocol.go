package mcpnode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The two eras of MCP a node may speak (docs/mcp.md, "Protocol eras").
const (
	// ModernProtocol is MCP 2026-07-28: no initialize and no session, a
	// server/discover, every request carrying its own _meta (protocol
	// version, client capabilities, log level), input_required results
	// retried with the answers (MRTR) instead of requests from the server
	// in the middle of a call, subscriptions/listen for change
	// notifications, no ping and no logging/setLevel.
	ModernProtocol = "2026-07-28"
	// LegacyProtocol is MCP 2025-11-25, the newest version with
	// initialize and sessions.
	LegacyProtocol = "2025-11-25"
	// ProtocolAuto negotiates: server/discover first, initialize when the
	// server does not know it (the Go SDK's way), then the version the
	// catalogue remembers for this server, so a restart needs no probe.
	ProtocolAuto = "auto"
)

// protocolOption checks a node's protocol option: "auto" (or empty), or a
// version the SDK speaks.
func protocolOption(p, transport string) error {
	switch {
	case p == "" || p == ProtocolAuto:
		return nil
	case !slices.Contains(mcp.SupportedProtocolVersions(), p):
		return fmt.Errorf("protocol %q: use auto, or one of %s", p, strings.Join(mcp.SupportedProtocolVersions(), ", "))
	case transport == "sse" && p >= ModernProtocol:
		return fmt.Errorf("protocol %q over the legacy SSE transport: MCP %s has no SSE transport; use --transport http, or protocol %s", p, p, LegacyProtocol)
	}
	return nil
}

// modern reports whether version is of the 2026-07-28 era.
func modern(version string) bool { return version >= ModernProtocol }

// oldWayMarker is in the Go SDK's refusal of a request a server of
// 2026-07-28 tries to make of the client in the middle of a call (for
// sampling, elicitation or roots), which that era forbids: such a server
// was written for 2025-11-25 and offers 2026-07-28 only because its SDK
// does.
const oldWayMarker = "cannot be sent while serving a request on protocol version"

// askedTheOldWay reports whether a call's outcome is that refusal: the
// server failed the call (or its tool) where it asked for input.
func askedTheOldWay(res *mcp.CallToolResult, err error) bool {
	if err != nil {
		return strings.Contains(err.Error(), oldWayMarker)
	}
	if res == nil || !res.IsError {
		return false
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok && strings.Contains(t.Text, oldWayMarker) {
			return true
		}
	}
	return false
}

// speakLegacy reconnects a node of protocol auto in the 2025-11-25 era,
// for a server that asked for input the old way in a call of 2026-07-28
// (askedTheOldWay); the catalogue then remembers that version. It reports
// whether the node now speaks it. Calls in flight are cancelled, as by a
// restart.
func (n *Node) speakLegacy(ctx context.Context) bool {
	if p := n.opts.Protocol; p != "" && p != ProtocolAuto {
		return false // pinned: the person chose
	}
	n.lifeMu.Lock()
	defer n.lifeMu.Unlock()
	n.mu.RLock()
	c := n.conn
	n.mu.RUnlock()
	if c != nil && !isModern(c.cs) {
		return true // another call did it meanwhile
	}
	n.log.Warn("the server asked for input in the middle of a call, which MCP 2026-07-28 forbids; speaking 2025-11-25 with it")
	// The restart is the node's, not the call's: a call whose client goes
	// away in the middle of it (an abandoned input_required, Ctrl-C) must
	// not leave the node stopped or in ERROR for everyone. The handshake
	// is bounded by the node's start timeout.
	ctx = context.WithoutCancel(ctx)
	n.legacy.Store(true)
	_ = n.stopLocked(ctx)
	if err := n.startLocked(ctx); err != nil {
		n.legacy.Store(false)
		_ = n.stopLocked(ctx)
		_ = n.startLocked(ctx)
		return false
	}
	return true
}

// askVersion is the version connect asks for: "" lets the SDK negotiate
// (discover, then initialize). With protocol auto a server whose
// catalogue says it spoke an older version is asked for that version at
// once (remembered is true), so no discover is tried; a server of
// 2026-07-28 is asked with discover, its own handshake. Probe ignores
// the catalogue (`nerve node sync`, or the remembered version failed).
// The legacy SSE transport always asks the newest legacy version.
func (n *Node) askVersion(probe bool) (version string, remembered bool) {
	switch p := n.opts.Protocol; {
	case p != "" && p != ProtocolAuto:
		return p, false
	case n.server.Transport == "sse" || n.legacy.Load():
		return LegacyProtocol, false
	case probe:
		return "", false
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	if r := n.initResult; r != nil && r.ProtocolVersion != "" && !modern(r.ProtocolVersion) {
		return r.ProtocolVersion, true
	}
	return "", false
}

// checkVersion refuses a session whose version is not the one the node is
// pinned to: a node pinned to 2026-07-28 whose server answered discover
// with an error was talked down by the SDK to initialize.
func (n *Node) checkVersion(got string) error {
	p := n.opts.Protocol
	if p == "" || p == ProtocolAuto || !modern(p) || modern(got) {
		return nil
	}
	return fmt.Errorf("node %s is set to speak MCP %s (option protocol), but its server speaks only %s: set it with `--protocol auto` or `--protocol %s`", n.ID(), p, got, got)
}

// errRememberedVersion wraps a connect that asked for the version the
// catalogue remembered and was refused; startLocked then probes.
var errRememberedVersion = errors.New("the server refused the protocol version it spoke before")

// refusedVersion reports whether err is a server's answer refusing the
// handshake (an error response to initialize, or a version the SDK does
// not speak), as opposed to a transport that failed.
func refusedVersion(err error) bool {
	var werr *jsonrpc.Error
	return errors.As(err, &werr) || strings.Contains(err.Error(), "unsupported protocol version")
}

// Protocol returns the node's protocol option ("auto" when unset).
func (n *Node) Protocol() string {
	if p := n.opts.Protocol; p != "" {
		return p
	}
	return ProtocolAuto
}

// isModern reports whether the session cs speaks 2026-07-28.
func isModern(cs *mcp.ClientSession) bool {
	r := cs.InitializeResult()
	return r != nil && modern(r.ProtocolVersion)
}

// modernMeta is the sending middleware of a node's client: on a session of
// 2026-07-28 it adds the log level the node was given (SetLoggingLevel) to
// every request's _meta, which is where that era takes it (there is no
// logging/setLevel).
func (n *Node) modernMeta(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		lvl := n.logLevel.Load()
		cs, ok := req.GetSession().(*mcp.ClientSession)
		if lvl == nil || !ok || strings.HasPrefix(method, "notifications/") || !isModern(cs) {
			return next(ctx, method, req)
		}
		if p := req.GetParams(); p != nil {
			m := p.GetMeta()
			if m == nil {
				m = map[string]any{}
			}
			if _, set := m[mcp.MetaKeyLogLevel]; !set {
				m[mcp.MetaKeyLogLevel] = *lvl
				p.SetMeta(m)
			}
		}
		return next(ctx, method, req)
	}
}
