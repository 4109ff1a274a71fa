package cli

import (
	"context"
	"fmt"
	"strings"
)

func runMCPURL(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 0 {
		return usagef(inv, "`nerve mcp url` takes no arguments (one node's endpoint: --node NAME)")
	}
	o, err := serveOptions(inv)
	if err != nil {
		return err
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	ep, err := s.MCPEndpoint(ctx)
	if err != nil {
		return err
	}
	url := ep.URL
	if id := inv.Flag("node"); id != "" {
		if _, err := s.Node(ctx, id); err != nil {
			return err
		}
		url = strings.Replace(ep.NodeURL, "NODE", id, 1)
	}
	if q := o.Query(); len(q) > 0 {
		url += "?" + q.Encode()
	}
	if env.JSON {
		return printJSON(env, map[string]string{"url": url, "token": ep.Token, "token_file": ep.TokenFile})
	}
	if hint := forwardHint(env, url); hint != "" {
		fmt.Fprintf(env.Stderr, "nerve: %s\n", hint) // context.go
	}
	_, err = fmt.Fprintf(env.Stdout, "%s\n%s\n", url, ep.Token)
	return err
}
