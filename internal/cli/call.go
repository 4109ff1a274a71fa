package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/commander"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
)

func callCmd() *Command {
	return &Command{
		Name:    "call",
		Summary: "run one Commander line and exit",
		Usage:   "call LINE...",
		Help: `LINE is a Commander line; the words are joined with spaces.
The answer goes to stdout, errors to stderr. Exit codes: 0 done, 1 could
not do it, 2 bad input, 3 the tool ran and reported an error.
Flags go before LINE (nerve --json call @fs ...): everything after the
first word of LINE belongs to it.

Examples:
  nerve call @fs read_file '{"path":"/tmp/a"}'
  nerve call @fs read_file path=/tmp/a
  nerve call @bash ls -la
  nerve call @fs ?              list fs's tools
  nerve call @fs read_file ?    help for one tool
  nerve --json call @fs read_file path=/tmp/a`,
		RawArgs:  true,
		Complete: "line",
		Run:      runCall,
	}
}

func runCall(ctx context.Context, env *Env, inv *Invocation) error {
	line := strings.TrimSpace(strings.Join(inv.Args, " "))
	if line == "" {
		return usagef(inv, "`nerve call` needs a Commander line, e.g. `nerve call @bash ls`")
	}
	if line[0] == ':' {
		ln, err := commander.Parse(line, commander.NewIndex(nil), nil)
		if err != nil {
			return usagef(inv, "%v", err)
		}
		return Exec(ctx, env, ln.Argv)
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	// Only the named node's tools are needed to parse the line: one round
	// trip, and an unknown node is reported by the daemon, which lists the
	// session's nodes.
	cat := map[string][]*mcp.Tool{}
	if id := lineNode(line); id != "" {
		tools, err := s.Tools(ctx, id)
		if err != nil {
			return err
		}
		cat[id] = tools
	}
	ln, err := commander.Parse(line, commander.NewIndex(cat), nil)
	if err != nil {
		return usagef(inv, "%v", err)
	}
	switch ln.Kind {
	case commander.Empty:
		return usagef(inv, "`nerve call` needs a Commander line, e.g. `nerve call @bash ls`")
	case commander.Command:
		return Exec(ctx, env, ln.Argv)
	case commander.NodeHelp:
		if env.JSON {
			return printJSON(env, cat[ln.Node])
		}
		_, err := fmt.Fprint(env.Stdout, commander.RenderToolList(ln.Node, cat[ln.Node], nil))
		return err
	case commander.ToolHelp:
		tools := cat[ln.Node]
		for _, t := range tools {
			if t.Name == ln.Tool {
				if env.JSON {
					return printJSON(env, t)
				}
				_, err := fmt.Fprint(env.Stdout, commander.RenderToolHelp(ln.Node, t, len(tools) == 1, nil))
				return err
			}
		}
		return fmt.Errorf("node %q has no tool %q", ln.Node, ln.Tool)
	}
	res, err := s.Call(ctx, ln.Node, ln.Tool, ln.Args, func(l api.CallLine) { showCallLine(env, ln.Node, l) })
	if err != nil {
		return err
	}
	if env.JSON {
		if err := printJSON(env, res); err != nil {
			return err
		}
	} else if err := printResult(env, res); err != nil {
		return err
	}
	if res.IsError {
		return errToolFailed
	}
	return nil
}

// lineNode returns the node a Commander line starting with '@' names.
func lineNode(line string) string {
	if !strings.HasPrefix(line, "@") {
		return ""
	}
	end := strings.IndexAny(line[1:], " \t\n.?")
	if end < 0 {
		return line[1:]
	}
	return line[1 : 1+end]
}

// showCallLine reports what happens during a call on stderr: progress and
// log messages. Streamed text is not repeated: the result holds it.
func showCallLine(env *Env, nodeID string, l api.CallLine) {
	switch l.Kind {
	case node.EventProgress:
		switch {
		case l.Total > 0:
			fmt.Fprintf(env.Stderr, "@%s: %.0f/%.0f %s\n", nodeID, l.Progress, l.Total, l.Message)
		default:
			fmt.Fprintf(env.Stderr, "@%s: %v %s\n", nodeID, l.Progress, l.Message)
		}
	case node.EventLog:
		fmt.Fprintf(env.Stderr, "@%s %s: %s\n", nodeID, l.Level, strings.TrimSpace(string(l.Data)))
	case node.EventStep:
		if l.Step == "graph" {
			fmt.Fprintf(env.Stderr, "@%s %s\n", nodeID, graphStepLine(l.Data))
		}
	}
}

// printResult prints a result for people: its text on stdout (stderr for
// an error result); binary content is saved to files whose paths are shown.
func printResult(env *Env, res *mcp.CallToolResult) error {
	r := commander.RenderResult(res, commander.RenderOptions{MaxBytes: -1, HideStructuredBesideText: true})
	if len(r.Attachments) > 0 {
		dir, err := os.MkdirTemp("", "nerve-call-")
		if err != nil {
			return fmt.Errorf("saving the result's attachments: %w", err)
		}
		var saved []string
		for _, a := range r.Attachments {
			p := filepath.Join(dir, a.Name)
			if err := os.WriteFile(p, a.Data, 0o600); err != nil {
				return fmt.Errorf("saving the result's attachments: %w", err)
			}
			saved = append(saved, p)
		}
		r.Fill(saved, "")
	}
	w := env.Stdout
	if r.IsError {
		w = env.Stderr
	}
	_, err := fmt.Fprint(w, r.Text)
	return err
}
