package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/nerve-dev/nerve/internal/mcpserver"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/client"
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
				Usage:   "mcp serve [-s SESSION] [--node NAME] [--names qualified|llm] [--tools GLOBS] [--read-only] [--discover] [--code] [--manage]",
				Help: `Speaks MCP on stdin/stdout, backed by the daemon (started if needed), so
that {"command": "nerve", "args": ["mcp", "serve"]} in any MCP config gives
that client the session: every tool of every ready node as node.tool, the
resources and prompts of mcp nodes, and notifications/tools/list_changed
when nodes come and go.

--node NAME serves that node alone, unprefixed, with all its capabilities
(resources, templates, prompts, completion, logging, subscriptions; its
sampling and elicitation requests go to the client): a persistent proxy for
one MCP server.

--names llm serves node__tool instead, for clients that reject dots.

--tools GLOBS gives this client only some tools: comma-separated globs over
node.tool, "!" to exclude ('fs.*,github.*,!github.delete_*'); a hidden tool
is neither listed nor callable. It narrows the session's own filter
(` + "`nerve session set expose GLOBS`" + `), never widens it. --read-only keeps
only the tools their server marks readOnlyHint.

--discover serves three tools instead of every tool: search_tools (find
tools by what they do), describe_tool and call_tool, for sessions with
more tools than a model should read on every request.

--code serves run_script instead of every tool (beside the three above with
--discover): the model writes one Starlark script that calls the tools as
functions (fs.read_text_file(path="a.txt")), and only its result comes
back (docs/code-mode.md). The script sees and calls only the tools this
client may see.

--manage adds list_nodes (the nodes, their states and last errors) and
restart_node, so a model can see why a server died and bring it back.`,
				Flags: []*Flag{
					{Name: "node", Value: "NAME", Usage: "serve only node NAME, unprefixed, with all its capabilities"},
					{Name: "names", Value: "qualified|llm", Usage: "tool names: node.tool (default) or node__tool"},
					{Name: "tools", Value: "GLOBS", Usage: "only these tools: globs over node.tool, ! to exclude ('fs.*,!fs.write_*')"},
					{Name: "read-only", Usage: "only tools annotated readOnlyHint"},
					{Name: "discover", Usage: "serve search_tools, describe_tool and call_tool instead of every tool"},
					{Name: "code", Usage: "serve run_script (a script that calls the tools) instead of every tool"},
					{Name: "manage", Usage: "add list_nodes and restart_node"},
				},
				Complete: "node",
				Run:      runMCPServe,
			},
			{
				Name:    "url",
				Summary: "print the session's streamable HTTP endpoint and its bearer token",
				Usage:   "mcp url [-s SESSION] [--node NAME] [--names qualified|llm] [--tools GLOBS] [--read-only] [--discover] [--code] [--manage]",
				Help: `Prints two lines: the URL, then the token to send as
"Authorization: Bearer TOKEN". The endpoint listens on 127.0.0.1 only.
The flags are those of ` + "`nerve mcp serve`" + `, put in the URL's query
(?tools=GLOBS&discover=1&code=1).`,
				Flags: []*Flag{
					{Name: "node", Value: "NAME", Usage: "the endpoint of node NAME alone"},
					{Name: "names", Value: "qualified|llm", Usage: "tool names: node.tool (default) or node__tool"},
					{Name: "tools", Value: "GLOBS", Usage: "only these tools: globs over node.tool, ! to exclude"},
					{Name: "read-only", Usage: "only tools annotated readOnlyHint"},
					{Name: "discover", Usage: "search_tools, describe_tool and call_tool instead of every tool"},
					{Name: "code", Usage: "run_script (a script that calls the tools) instead of every tool"},
					{Name: "manage", Usage: "add list_nodes and restart_node"},
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
	o, err := serveOptions(inv)
	if err != nil {
		return err
	}
	// Apps (Claude Desktop, editors) start MCP servers with a minimal
	// environment: a daemon started from here uses the login shell's PATH,
	// so nodes find node, npx, uvx, bash as they do in a terminal.
	if env.conn == nil {
		env.conn = &connState{}
	}
	env.conn.loginPath = true
	id := inv.Flag("node")
	r, err := env.remote()
	if err != nil {
		return err
	}
	var s *client.Session
	if r != nil {
		// Through ssh each connection is an ssh process: the upgrade below
		// is the only one (the host starts its daemon for it), and the
		// daemon's answer to it names a missing session or node.
		c := env.newRemoteClient(r, true) // context.go
		env.conn.client = c
		s = c.Session(env.SessionName())
	} else {
		if s, err = env.session(ctx); err != nil {
			return err
		}
		if id != "" {
			_, err = s.Node(ctx, id)
		} else {
			_, err = s.Nodes(ctx)
		}
		if err != nil {
			return err
		}
	}
	// The daemon serves MCP on the connection itself; this process only
	// relays bytes, so a message costs no decode, encode or extra request
	// here.
	o.Node = id
	conn, err := s.MCPStdioWith(ctx, o)
	if err != nil {
		return err
	}
	defer conn.Close()
	in := env.Stdin
	if in == nil {
		in = os.Stdin
	}
	return relay(ctx, conn, in, env.Stdout)
}

// serveOptions reads the flags `mcp serve` and `mcp url` share.
func serveOptions(inv *Invocation) (api.MCPServe, error) {
	o := api.MCPServe{
		Names: inv.Flag("names"), Tools: inv.Flag("tools"),
		ReadOnly: inv.Bool("read-only"), Discover: inv.Bool("discover"), Manage: inv.Bool("manage"),
		Code: inv.Bool("code"),
	}
	check := mcpserver.Options{Names: o.Names, Tools: o.Tools}
	if err := check.Validate(); err != nil {
		return o, usagef(inv, "%v", err)
	}
	return o, nil
}

// relay copies in to conn and conn to out until the daemon closes conn.
// The end of in half-closes conn: the daemon finishes answering, ends the
// MCP session and closes conn.
func relay(ctx context.Context, conn net.Conn, in io.Reader, out io.Writer) error {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	sent := make(chan error, 1)
	go func() {
		_, err := io.Copy(conn, in)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = conn.Close()
		}
		sent <- err
	}()
	_, err := io.Copy(out, conn)
	select {
	case serr := <-sent:
		if serr != nil && err == nil {
			err = fmt.Errorf("reading stdin: %w", serr)
		}
	default:
		// The daemon ended the session first (it stopped, or the session
		// went away) while stdin is still open: the goroutine above ends
		// with this process, as a read of stdin cannot be interrupted.
	}
	if ctx.Err() != nil {
		return nil
	}
	if err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("relaying MCP to the daemon: %w", err)
	}
	return nil
}
