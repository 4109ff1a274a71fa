package cli

import "context"

// Tree returns the command tree of nerve. Each call returns a fresh tree.
func Tree() *Command {
	return &Command{
		Name:    "nerve",
		Summary: "nerve keeps tool providers (bash, MCP servers, Claude Code, agents) alive as nodes of a session.",
		Usage:   "[-s NAME] [--embedded] [COMMAND]",
		Help: `With no command, nerve opens the Commander REPL on the session
(starting the daemon if needed).

Examples:
  nerve node add bash sh
  nerve call @sh ls -la
  nerve node add mcp fs -- npx -y @modelcontextprotocol/server-filesystem /tmp
  nerve call @fs read_file '{"path":"/tmp/a"}'`,
		Run: runREPL,
		Sub: []*Command{
			nodeCmd(),
			graphCmd(),                                           // graph.go
			toolsCmd(),                                           // tools_search.go
			resourcesCmd(), readCmd(), promptsCmd(), promptCmd(), // resources.go
			callCmd(),
			scriptCmd(), // script.go
			planCmd(),   // plan.go
			toolCmd(),
			withSub(mcpCmd(), mcpImportCmd(), mcpExportCmd(), mcpConnectCmd()), // mcp_serve.go; import: mcp_import.go; export: mcp_export.go; connect: mcp_connect.go
			sessionCmd(),
			contextCmd(), // context.go
			envCmd(),     // env.go
			secretCmd(),
			daemonCmd(),
			logCmd(),
			uiCmd(), // ui.go
			{
				Name:    "version",
				Summary: "print nerve's version",
				Usage:   "version",
				Local:   true,
				Run:     runVersion,
			},
			completionCmd(),
			{
				Name:     "help",
				Summary:  "show help for a command",
				Usage:    "help [COMMAND...]",
				Local:    true,
				Complete: "command",
				Run:      runHelp,
			},
			{
				Name:    "__complete",
				Summary: "print completion candidates for a command line (used by the shell scripts)",
				Usage:   "__complete -- WORDS...",
				Hidden:  true,
				Local:   true,
				Run:     runComplete,
			},
		},
	}
}

func runREPL(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 0 {
		return usagef(inv, "unknown command %q (see `nerve --help`)", inv.Args[0])
	}
	return RunREPL(ctx, replEnv(env, inv))
}

func runHelp(ctx context.Context, env *Env, inv *Invocation) error {
	root := Tree()
	cmd, path := root, []string(nil)
	for _, a := range inv.Args {
		sub := cmd.Lookup(a)
		if sub == nil {
			return &UsageError{Msg: unknownCommand(cmd, path, a), Cmd: cmd, Path: path}
		}
		cmd, path = sub, append(path, sub.Name)
	}
	return writeHelp(env.Stdout, cmd, path)
}
