package cli

import (
	"context"

	"fmt"
	"os"
	"path/filepath"

	"github.com/nerve-dev/nerve/internal/atomicfile"
	"github.com/nerve-dev/nerve/internal/clientconf"
	"github.com/nerve-dev/nerve/pkg/node"
)

func mcpExportCmd() *Command {
	return &Command{
		Name:    "export",
		Summary: "write the session's MCP servers as a .mcp.json",
		Usage:   "mcp export [FILE|-] [--force]",
		Help: `Writes every mcp node of the session as a server of a .mcp.json (Claude
Code's format, which Claude Desktop, Cursor and nerve mcp import read too),
in the session's order: stdio servers with their command, args, env and
cwd; http and sse servers with their url and headers. Values are written
as the nodes keep them: a ${VAR} stays a reference, never its value. A
server started in FILE's folder is written without "cwd", so the file
stays valid where it is moved with its folder.

FILE defaults to - (standard output). An existing FILE is not replaced
without --force. Options a .mcp.json has no key for (roots, restart,
ping, oauth, …) are left out, each with a note on stderr; so is an env
or header value that looks like a secret and is not a ${VAR}.

Examples:
  nerve mcp export
  nerve mcp export .mcp.json
  nerve mcp export backup.json --force`,
		Flags: []*Flag{{Name: "force", Usage: "replace FILE if it exists"}},
		Run:   runMCPExport,
	}
}

func runMCPExport(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 1 {
		return usagef(inv, "`nerve mcp export` takes one FILE at most (got %d); - is standard output", len(inv.Args))
	}
	file := "-"
	if len(inv.Args) == 1 {
		file = inv.Args[0]
	}
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	if file != "-" {
		if !inv.Bool("force") {
			if _, err := os.Stat(file); err == nil {
				return usagef(inv, "%s exists: give --force to replace it, or another FILE", file)
			}
		}
		if dir, err = filepath.Abs(filepath.Dir(file)); err != nil {
			return err
		}
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	infos, err := s.Nodes(ctx)
	if err != nil {
		return err
	}
	var specs []node.Spec
	for _, i := range infos {
		if i.Kind != "mcp" {
			continue
		}
		d, err := s.Node(ctx, i.ID)
		if err != nil {
			return err
		}
		specs = append(specs, d.Spec)
	}
	data, notes, err := clientconf.Export(specs, dir)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(env.Stderr, "nerve: note: %s\n", n)
	}
	if len(specs) == 0 {
		fmt.Fprintf(env.Stderr, "nerve: note: the session has no mcp nodes; the file has no servers\n")
	}
	if file == "-" {
		_, err := env.Stdout.Write(data)
		return err
	}
	if err := atomicfile.Write(file, data, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	fmt.Fprintf(env.Stderr, "wrote %d server%s to %s\n", len(specs), plural(len(specs)), file)
	return nil
}
