package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

func nodeStopCmd() *Command {
	return &Command{Name: "stop", Summary: "stop nodes and keep them stopped (a daemon restart too) until `node start`; settings and catalogue are kept",
		Usage: "node stop NAME...", Complete: "node", Run: runNodeStop}
}

func nodeStartCmd() *Command {
	return &Command{Name: "start", Summary: "start nodes that are stopped (`node stop`, or imported disabled)",
		Usage: "node start NAME...", Complete: "node", Run: runNodeStart}
}

func runNodeStop(ctx context.Context, env *Env, inv *Invocation) error {
	return eachNode(ctx, env, inv, (*client.Session).Stop)
}

func runNodeStart(ctx context.Context, env *Env, inv *Invocation) error {
	return eachNode(ctx, env, inv, (*client.Session).Start)
}

// eachNode runs op on every NAME given and prints each node's state (a
// JSON array with --json); it goes on past a failure and reports them all.
func eachNode(ctx context.Context, env *Env, inv *Invocation, op func(*client.Session, context.Context, string) (node.Info, error)) error {
	if len(inv.Args) == 0 {
		return usagef(inv, "`nerve %s` needs at least one NAME", strings.Join(inv.Path, " "))
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	var errs []error
	infos := []node.Info{}
	for _, id := range inv.Args {
		info, err := op(s, ctx, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		infos = append(infos, info)
		if !env.JSON {
			fmt.Fprintf(env.Stdout, "%s is %s\n", info.ID, info.State)
		}
	}
	if env.JSON {
		if err := printJSON(env, infos); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}
