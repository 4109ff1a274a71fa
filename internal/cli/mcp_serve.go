package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/mcpserver"
)

func mcpCmd() *Command {
	return &Command{
		Name:    "mcp",
		Summary: "serve the session to other MCP clients (Claude Code, Claude Desktop, IDEs)",
		Usage:   "mcp COMMAND",
		Help: `The session's tools as one MCP server, named node.tool. See docs/mcp-server.md
for configs of Claude Code, Claude Desktop and VS Code.`,
		Sub: []*Command{
			{
				Name:    "serve",
				Summary: "serve the session (or one node) as an MCP server on stdio",
				Usage:   "mcp serve [-s SESSION] [--node NAME] [--names qualified|llm]",
				Help: `Speaks MCP on stdin/stdout, backed by the daemon (started if needed), so
that {"command": "nerve", "args": ["mcp", "serve"]} in any MCP config gives
that client the session: every tool of every ready node as node.tool, the
resources and prompts of mcp nodes, and notifications/tools/list_changed
when nodes come and go.

--node NAME serves that node alone, unprefixed, with all its capabilities
(resources, templates, prompts, completion, logging, subscriptions; its
sampling and elicitation requests go to the client): a persistent proxy for
one MCP server.

--names llm serves node__tool instead, for clients that reject dots.`,
				Flags: []*Flag{
					{Name: "node", Value: "NAME", Usage: "serve only node NAME, unprefixed, with all its capabilities"},
					{Name: "names", Value: "qualified|llm", Usage: "tool names: node.tool (default) or node__tool"},
				},
				Complete: "node",
				Run:      runMCPServe,
			},
			{
				Name:    "url",
				Summary: "print the session's streamable HTTP endpoint and its bearer token",
				Usage:   "mcp url [-s SESSION] [--node NAME]",
				Help: `Prints two lines: the URL, then the token to send as
"Authorization: Bearer TOKEN". The endpoint listens on 127.0.0.1 only.`,
				Flags: []*Flag{
					{Name: "node", Value: "NAME", Usage: "the endpoint of node NAME alone"},
				},
				Run: runMCPURL,
			},
		},
	}
}

func runMCPServe(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 0 {
		return usagef(inv, "`nerve mcp serve` takes no arguments (serve one node with --node NAME)")
	}
	names := inv.Flag("names")
	if err := mcpserver.ValidateNames(names); err != nil {
		return usagef(inv, "%v", err)
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	id := inv.Flag("node")
	if id != "" {
		if _, err := s.Node(ctx, id); err != nil {
			return err
		}
	} else if _, err := s.Nodes(ctx); err != nil {
		return err
	}
	srv := mcpserver.New(mcpserver.NewClientBackend(s), &mcpserver.Options{Node: id, Names: names, Version: Version()})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	var runErr error
	wg.Go(func() {
		// Without the daemon's events the tools would go stale: stop, and
		// let the client start us again.
		if runErr = srv.Run(ctx); runErr != nil {
			cancel()
		}
	})
	select {
	case <-srv.Ready():
	case <-ctx.Done():
	}
	in := env.Stdin
	if in == nil {
		in = os.Stdin
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{env.Stdout}}
	err = srv.MCP().Run(ctx, t)
	cancel()
	wg.Wait()
	if runErr != nil {
		return fmt.Errorf("lost the daemon's events: %w (is the daemon running? see `nerve daemon status`)", runErr)
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("serving MCP on stdio: %w", err)
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
