package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/nerve-dev/nerve/internal/dashboard"
	"github.com/nerve-dev/nerve/internal/graphlang"
	"github.com/nerve-dev/nerve/internal/tokenstore"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
)

func uiCmd() *Command {
	return &Command{Name: "ui", Summary: "open the session's live dashboard in a browser (--url prints its address)",
		Usage: "ui [--url]", Run: runUI,
		Help: `Opens the dashboard the daemon serves on its loopback HTTP listener
(the MCP endpoint's): the session's nodes with their state, tools and
errors, buttons to start, stop, restart and sign in, a form for each
tool, the call log as it happens and graph runs drawn step by step.
The browser is $BROWSER, else the platform's opener; over SSH or with
none, nerve prints the address instead.

The address carries a one-time token, good once and for a minute: the
page trades it for a cookie of that browser. Open the dashboard again
with ` + "`nerve ui`" + `; see docs/dashboard.md.

Examples:
  nerve ui
  nerve ui --url
  nerve -s work ui`,
		Flags: []*Flag{{Name: "url", Usage: "print the address (with its one-time token) and open nothing"}}}
}

func runUI(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) > 0 {
		return usagef(inv, "`nerve ui` takes no arguments (another session: `nerve -s NAME ui`)")
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	var link api.UILink
	if err := s.Do(ctx, http.MethodPost, "/ui", nil, &link); err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, link)
	}
	if hint := forwardHint(env, link.URL); hint != "" {
		// A browser here cannot reach that machine's loopback.
		fmt.Fprintf(env.Stderr, "nerve: %s\n", hint) // context.go
		_, err := fmt.Fprintln(env.Stdout, link.URL)
		return err
	}
	if inv.Bool("url") {
		_, err := fmt.Fprintln(env.Stdout, link.URL)
		return err
	}
	how, err := openBrowser(env, link.URL)
	switch {
	case how == "":
		fmt.Fprintln(env.Stderr, "no browser here: open this address (good once, for a minute):")
	case err != nil:
		fmt.Fprintf(env.Stderr, "nerve: opening the dashboard with %s failed: %v; open this address (good once, for a minute):\n", how, err)
	default:
		fmt.Fprintf(env.Stderr, "opened the dashboard with %s\n", how)
		return nil
	}
	_, err = fmt.Fprintln(env.Stdout, link.URL)
	return err
}

// uiHooks are the dashboard's needs from above the daemon: the OAuth
// sign-in of `nerve node auth`, with tokens kept in store, and a graph's
// steps.
func uiHooks(store tokenstore.Store) dashboard.Hooks {
	return dashboard.Hooks{
		CanSignIn: func(spec node.Spec) bool {
			k := kindCLI(spec.Kind)
			if k == nil || k.SignIn == nil {
				return false
			}
			_, err := k.SignIn.Target(spec, os.LookupEnv)
			return err == nil
		},
		SignIn: func(ctx context.Context, spec node.Spec, show func(string)) (bool, error) {
			return signIn(ctx, spec, store, func(ctx context.Context, authURL string) (*auth.AuthorizationResult, error) {
				return awaitSignIn(ctx, spec.ID, authURL, func(*url.URL) { show(authURL) })
			})
		},
		Steps: graphSteps,
	}
}

// graphSteps reads a graph node's steps from its definition, with the
// graph kind's own parser.
func graphSteps(spec node.Spec) ([]dashboard.Step, error) {
	if spec.Kind != graphlang.Kind {
		return nil, fmt.Errorf("node %q is a %s node, not a graph", spec.ID, spec.Kind)
	}
	var o graphlang.Options
	if err := spec.DecodeOptions(&o); err != nil {
		return nil, err
	}
	d, err := graphlang.Parse([]byte(o.Source))
	if err != nil {
		return nil, err
	}
	steps := make([]dashboard.Step, len(d.Steps))
	for i, s := range d.Steps {
		steps[i] = dashboard.Step{ID: s.ID, Call: s.Call, Needs: s.Deps}
	}
	return steps, nil
}
