package daemon

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/internal/mcpserver"
	"github.com/nerve-dev/nerve/pkg/session"
)

// MCPListenEnv chooses the address of the MCP endpoint (default
// 127.0.0.1:0, a free port). It must be a loopback address.
const MCPListenEnv = "NERVE_MCP_LISTEN"

// mcpTokenFile is the endpoint's bearer token, 0600, in the state folder.
const mcpTokenFile = "mcp-token"

func (d *Daemon) mcpEndpoint() (*mcpserver.Endpoint, bool) {
	ep := d.mcp.Load()
	return ep, ep != nil
}

// startMCP serves every session over streamable HTTP on 127.0.0.1; claude
// nodes (--session-tools) find its URL and token through their
// node.Env.MCPEndpoint (sessionEndpoint), so it must run before Restore
// starts any node. A failure is logged and noticed, never
// fatal: the local API works without the endpoint. The returned function
// stops it.
func (d *Daemon) startMCP() (stop func()) {
	tokenPath := filepath.Join(d.opts.Paths.State, mcpTokenFile)
	tok, err := mcpserver.LoadOrCreateToken(tokenPath)
	var ep *mcpserver.Endpoint
	if err == nil {
		ep, err = mcpserver.StartEndpoint(&mcpserver.EndpointOptions{
			Listen: cmp.Or(d.opts.MCPListen, os.Getenv(MCPListenEnv)),
			HTTPOptions: mcpserver.HTTPOptions{
				Token: tok,
				Session: func(ctx context.Context, name string) (*session.Session, error) {
					return d.session(ctx, name, false)
				},
				Version: d.opts.Version,
				Logger:  d.log.Named("mcp"),
			},
			Mounts: d.mounts(tok),
		})
	}
	if err != nil {
		d.log.Error("the MCP endpoint is not served", zap.Error(err))
		d.notice(fmt.Sprintf("the session MCP endpoint is not served: %v", err))
		return func() {}
	}
	d.log.Info("MCP endpoint ready", zap.String("addr", ep.Addr()))
	d.mcp.Store(ep)
	return func() {
		d.mcp.Store(nil)
		if d.ui != nil {
			d.ui.Close() // its event streams end before the listener's grace
		}
		if err := ep.Close(context.Background()); err != nil {
			d.log.Warn("closing the MCP endpoint", zap.Error(err))
		}
	}
}

// sessionEndpoint is node.Env.MCPEndpoint of session name's nodes: the
// endpoint's URL for that session and its token, while it is served.
func (d *Daemon) sessionEndpoint(name string) func() (url, token string, ok bool) {
	return func() (string, string, bool) {
		ep, ok := d.mcpEndpoint()
		if !ok {
			return "", "", false
		}
		return ep.URL(name), ep.Token(), true
	}
}
