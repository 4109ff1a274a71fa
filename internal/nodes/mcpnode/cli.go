package mcpnode

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/nerve-dev/nerve/internal/kindcli"
	"github.com/nerve-dev/nerve/internal/mcpconf"
	"github.com/nerve-dev/nerve/pkg/node"
)

// CLI is what `nerve node add mcp` and `nerve node auth` know of the kind.
func CLI() *kindcli.Kind {
	return &kindcli.Kind{
		Kind:  Kind,
		Usage: "node add mcp NAME [--env K=V] [--cwd DIR] [--url URL] [--header 'K: V'] [--transport stdio|http|sse] [--timeout D] [--start-timeout D] [--ping D|off] [--protocol auto|2025-11-25|2026-07-28] [--restart on-failure] [--require-tools] [-- COMMAND ARGS...]",
		Help: `An MCP server: a command after -- (stdio), or --url (streamable HTTP,
or SSE). To add every server of a .mcp.json, see ` + "`nerve mcp import`" + `.

Examples:
  nerve node add mcp fs -- npx -y @modelcontextprotocol/server-filesystem /tmp
  nerve node add mcp gh --url https://host/mcp --header 'Authorization: Bearer ${TOKEN}'
  nerve node add mcp old --url https://host/sse --transport sse --timeout 2m`,
		Flags: []*kindcli.Flag{
			kindcli.Cwd, kindcli.Env, kindcli.Timeout,
			{Name: "url", Value: "URL", Usage: "the server's URL (streamable HTTP or SSE) instead of a command"},
			{Name: "transport", Value: "stdio|http|sse", Values: []string{"http", "sse", "stdio"}, Usage: "default: stdio for a command; http for --url (sse for a URL ending in /sse)"},
			kindcli.Header,
			{Name: "root", Value: "DIR", Usage: "folder offered to the server as an MCP root; with none, nerve offers no roots and the server keeps the folders on its command line", Repeat: true},
			{Name: "start-timeout", Value: "DURATION", Usage: "bound on the server's start (connect, initialize, list), default 30s; e.g. 5m for an `npx -y` server's first run, which downloads it"},
			{Name: "ping", Value: "DURATION|off", Usage: "ping an idle stdio server this often to find it hung (default 30s); off for a server that does not answer ping"},
			{Name: "protocol", Value: "auto|2025-11-25|2026-07-28", Values: []string{ProtocolAuto, LegacyProtocol, ModernProtocol}, Usage: "the MCP version to speak: auto (default) asks server/discover, then initialize, and remembers the answer; a version pins it"},
			{Name: "restart", Value: "on-failure", Values: []string{"on-failure"}, Usage: "come back from ERROR by itself, retrying with backoff (1s doubling to 1m)"},
			{Name: "inherit-env", Usage: "give a stdio server nerve's whole environment instead of the safe list (PATH, HOME, ...) plus --env"},
			{Name: "require-tools", Usage: "fail the start when the server's tools/list fails (without it the node runs with no tools and a warning in node info)"},
		},
		Options: cliOptions,
		SignIn:  &kindcli.SignIn{Target: signInTarget, Logout: logout, Run: signIn},
	}
}

// cliOptions fills in.Spec (command, transport, cwd, env) and returns the
// options of an mcp node, built the way `nerve mcp import` builds them:
// mcpconf.Server.Spec.
func cliOptions(_ context.Context, in *kindcli.Input) (any, error) {
	var o mcpconf.Options
	f, spec := in.Flags, in.Spec
	hs, err := kindcli.HeadersOf(f)
	if err != nil {
		return o, err
	}
	timeout, err := kindcli.TimeoutOf(f)
	if err != nil {
		return o, err
	}
	srv := mcpconf.Server{
		Name: spec.ID, Transport: f.Flag("transport"), Command: spec.Command, Cwd: spec.Cwd, Env: spec.Env,
		URL: f.Flag("url"), Headers: hs, Timeout: time.Duration(timeout),
	}
	switch t := srv.Transport; {
	case t != "" && t != "stdio" && t != "http" && t != "sse":
		return o, kindcli.Usagef("--transport %q: use stdio, http or sse", t)
	case len(srv.Command) > 0 && srv.URL != "":
		return o, kindcli.Usagef("give the server either as a command after -- (stdio) or as --url (http, sse), not both")
	case len(srv.Command) == 0 && srv.URL == "":
		return o, kindcli.Usagef("an mcp node needs a server: a command after -- (e.g. `nerve node add mcp fs -- npx -y @modelcontextprotocol/server-filesystem /tmp`) or --url URL")
	case t == "stdio" && srv.URL != "":
		return o, kindcli.Usagef("--transport stdio runs a command given after --; for --url use --transport http or sse")
	case (t == "http" || t == "sse") && srv.URL == "":
		return o, kindcli.Usagef("--transport %s needs --url URL; a command after -- runs over stdio", t)
	case len(hs) > 0 && srv.URL == "":
		return o, kindcli.Usagef("--header is sent to a --url server; a command's server takes --env instead")
	}
	// ServerFromSpec fills in the transport the kind would infer, so the
	// saved spec says which one is used.
	srv, _, err = mcpconf.ServerFromSpec(srv.Spec(spec.ID))
	if err != nil {
		return o, kindcli.Usagef("%v", err)
	}
	*spec = srv.Spec(spec.ID)
	if err := spec.DecodeOptions(&o); err != nil {
		return o, err
	}
	for _, r := range f.All("root") {
		abs, err := kindcli.AbsPath(r)
		if err != nil {
			return o, kindcli.Usagef("--root %q: %v", r, err)
		}
		o.Roots = append(o.Roots, abs)
	}
	switch r := f.Flag("restart"); r {
	case "", "on-failure":
		o.Restart = r
	default:
		return o, kindcli.Usagef("--restart %q: the one policy is on-failure (leave the flag out for none)", r)
	}
	o.InheritEnv = f.Bool("inherit-env")
	o.RequireTools = f.Bool("require-tools")
	if p := f.Flag("ping"); p != "" {
		if p != "off" {
			if d, err := time.ParseDuration(p); err != nil || d <= 0 {
				return o, kindcli.Usagef("--ping %q: use a duration such as 30s, or off", p)
			}
		}
		o.Ping = p
	}
	if p := f.Flag("protocol"); p != "" {
		if err := protocolOption(p, srv.Transport); err != nil {
			return o, kindcli.Usagef("--%v", err)
		}
		if p != ProtocolAuto {
			o.Protocol = p
		}
	}
	if o.StartTimeout, err = kindcli.DurationOf(f, "start-timeout", "90s or 5m"); err != nil {
		return o, err
	}
	return o, nil
}

// signInTarget is the URL a node of spec signs in to: only a server over
// streamable HTTP does.
func signInTarget(spec node.Spec, lookup func(string) (string, bool)) (string, error) {
	srv, _, err := mcpconf.ServerFromSpec(spec)
	if err != nil {
		return "", err
	}
	if srv.Transport != "http" {
		return "", kindcli.Usagef("node %q speaks %s: OAuth sign-in is for servers over streamable HTTP (a --url node)", spec.ID, srv.Transport)
	}
	u, err := mcpconf.Expand(srv.URL, lookup)
	if err != nil {
		return "", fmt.Errorf("node %q: url: %w", spec.ID, err)
	}
	return u, nil
}

func logout(tokens kindcli.Tokens, target string) error { return Logout(tokens, target) }

// signIn starts a node of spec, which signs in (asking authorize when no
// saved sign-in works) and keeps the tokens in tokens, and stops it.
func signIn(ctx context.Context, spec node.Spec, tokens kindcli.Tokens, authorize kindcli.Authorize) error {
	ask := func(ctx context.Context, _ string, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		return authorize(ctx, args.URL)
	}
	n, err := Factory(&Options{Authorize: ask, Tokens: tokens})(spec, node.Env{})
	if err != nil {
		return err
	}
	startErr := n.Start(ctx)
	_ = n.Stop(context.Background())
	return startErr
}
