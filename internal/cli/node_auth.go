package cli

import (
	"context"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/nerve-dev/nerve/internal/kindcli"
	"github.com/nerve-dev/nerve/internal/tokenstore"
	"github.com/nerve-dev/nerve/pkg/node"
)

// signInWait bounds how long `nerve node auth` waits for the browser.
const signInWait = 10 * time.Minute

func nodeAuthCmd() *Command {
	return &Command{Name: "auth", Summary: "sign in to an mcp node's server (OAuth) in a browser; --logout forgets the sign-in",
		Usage: "node auth NAME [--logout]", Complete: "node", Run: runNodeAuth,
		Help: `Opens the server's sign-in page in a browser ($BROWSER, else the
platform's opener; over SSH or with none it prints the URL to open
anywhere) and waits for the authorization server to send the browser back
to a loopback address (the node's oauth redirect_url, by default
http://127.0.0.1:7591/callback). The tokens are kept in the OS keychain
where there is one, else in a 0600 file in nerve's state folder
(NERVE_TOKENS=file|keychain chooses), never in the session's file or the
log; every client of the daemon uses them, and the refresh token renews
them without asking again. The node is then restarted with them.

Examples:
  nerve node auth github
  nerve node auth github --logout`,
		Flags: []*Flag{{Name: "logout", Usage: "forget the sign-in (the node needs a new one to start)"}}}
}

func runNodeAuth(ctx context.Context, env *Env, inv *Invocation) error {
	if err := notThroughSSH(env, inv); err != nil {
		return err // the sign-in is kept where the daemon runs
	}
	id, s, err := oneNodeSession(ctx, env, inv)
	if err != nil {
		return err
	}
	d, err := s.Node(ctx, id)
	if err != nil {
		return err
	}
	k := kindCLI(d.Spec.Kind)
	if k == nil || k.SignIn == nil {
		return usagef(inv, "node %q is a %s node: only mcp nodes of a remote server (--url) sign in", id, d.Spec.Kind)
	}
	u, err := k.SignIn.Target(d.Spec, func(name string) (string, bool) { v := env.getenv(name); return v, v != "" })
	if err != nil {
		return kindError(inv, err)
	}
	p, err := env.paths()
	if err != nil {
		return err
	}
	store, err := tokenstore.Open(p.State, env.getenv("NERVE_TOKENS"))
	if err != nil {
		return err
	}
	if inv.Bool("logout") {
		if err := k.SignIn.Logout(store, u); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "forgot the sign-in to %s\n", u)
		// A running node still holds the token in memory: restart it so
		// it no longer uses it.
		info, err := s.Restart(ctx, id)
		if err != nil {
			fmt.Fprintf(env.Stderr, "nerve: %s needs a sign-in now: `nerve node auth %s`\n", id, id)
			return nil
		}
		fmt.Fprintf(env.Stdout, "%s is %s\n", info.ID, info.State)
		return nil
	}

	sctx, cancel := context.WithTimeout(ctx, signInWait)
	defer cancel()
	asked, err := signIn(sctx, d.Spec, store, func(ctx context.Context, authURL string) (*auth.AuthorizationResult, error) {
		return browserSignIn(ctx, env, id, authURL)
	})
	if err != nil {
		return fmt.Errorf("signing in to %s: %w", u, err)
	}
	if asked {
		fmt.Fprintf(env.Stderr, "signed in to %s; the tokens are kept in %s\n", u, store.Where())
	} else {
		fmt.Fprintf(env.Stderr, "already signed in to %s (the saved sign-in works); `nerve node auth %s --logout` first to sign in again\n", u, id)
	}
	info, err := s.Restart(ctx, id)
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, info)
	}
	fmt.Fprintf(env.Stdout, "%s is %s with %d tool%s\n", info.ID, info.State, info.Tools, plural(info.Tools))
	return nil
}

// signIn signs in to the server of spec's node through its kind
// (kindcli.SignIn.Run), with tokens kept in store; authorize sends the
// person to the authorization URL. asked says whether a sign-in page was
// needed (else a saved sign-in worked).
func signIn(ctx context.Context, spec node.Spec, store tokenstore.Store, authorize kindcli.Authorize) (asked bool, err error) {
	k := kindCLI(spec.Kind)
	if k == nil || k.SignIn == nil {
		return false, fmt.Errorf("node %q is a %s node: only mcp nodes of a remote server (--url) sign in", spec.ID, spec.Kind)
	}
	var was atomic.Bool
	err = k.SignIn.Run(ctx, spec, store, func(ctx context.Context, authURL string) (*auth.AuthorizationResult, error) {
		was.Store(true)
		return authorize(ctx, authURL)
	})
	return was.Load(), err
}

// browserSignIn sends the person to authURL and waits for the
// authorization server's redirect to the loopback redirect_uri it names.
func browserSignIn(ctx context.Context, env *Env, id, authURL string) (*auth.AuthorizationResult, error) {
	return awaitSignIn(ctx, id, authURL, func(redirect *url.URL) {
		fmt.Fprintf(env.Stderr, "To sign in for node %s, open this URL in a browser:\n\n  %s\n\n", id, authURL)
		if how, err := openBrowser(env, authURL); how != "" {
			if err != nil {
				fmt.Fprintf(env.Stderr, "nerve: opening it with %s failed: %v; open it by hand\n", how, err)
			} else {
				fmt.Fprintf(env.Stderr, "(opened with %s; waiting for the sign-in…)\n", how)
			}
		} else {
			fmt.Fprintf(env.Stderr, "(no browser here; waiting for the sign-in at %s…)\n", redirect)
		}
	})
}

// awaitSignIn listens on the loopback redirect_uri that authURL names,
// calls show once it listens, and waits for the authorization server to
// send the browser there.
func awaitSignIn(ctx context.Context, id, authURL string, show func(redirect *url.URL)) (*auth.AuthorizationResult, error) {
	au, err := url.Parse(authURL)
	if err != nil {
		return nil, fmt.Errorf("the authorization URL %q: %w", authURL, err)
	}
	redirect, err := url.Parse(au.Query().Get("redirect_uri"))
	if err != nil || redirect.Host == "" {
		return nil, fmt.Errorf("the authorization URL names no redirect_uri to wait on: %s", authURL)
	}
	if h := redirect.Hostname(); h != "127.0.0.1" && h != "localhost" && h != "::1" {
		return nil, fmt.Errorf("the node's oauth redirect_url %s is not a loopback address, so nerve cannot receive the sign-in: use one such as http://127.0.0.1:7591/callback", redirect)
	}
	ln, err := net.Listen("tcp", redirect.Host)
	if err != nil {
		return nil, fmt.Errorf("listening for the sign-in on %s: %w (is another `nerve node auth` running? or set another port with the node's oauth redirect_url)", redirect.Host, err)
	}
	type answer struct {
		res *auth.AuthorizationResult
		err error
	}
	got := make(chan answer, 1)
	path := redirect.Path
	if path == "" {
		path = "/"
	}
	mux := http.NewServeMux()
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var a answer
		switch {
		case q.Get("error") != "":
			a.err = fmt.Errorf("the authorization server refused the sign-in: %s %s", q.Get("error"), q.Get("error_description"))
		case q.Get("code") == "":
			http.Error(w, "no code in this request", http.StatusBadRequest)
			return
		default:
			a.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if a.err != nil {
			fmt.Fprintf(w, "<p>nerve: the sign-in of %s failed: %s</p>", html.EscapeString(id), html.EscapeString(a.err.Error()))
		} else {
			fmt.Fprintf(w, "<p>nerve: signed in for node %s. You may close this tab.</p>", html.EscapeString(id))
		}
		select {
		case got <- a:
		default:
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	show(redirect)
	select {
	case a := <-got:
		return a.res, a.err
	case <-ctx.Done():
		return nil, fmt.Errorf("no sign-in arrived at %s: %w", redirect, context.Cause(ctx))
	}
}

// openBrowser opens u with $BROWSER, else the platform's opener; over SSH
// without $BROWSER it opens nothing. It says what it used ("" for
// nothing); the browser runs on, not waited for.
func openBrowser(env *Env, u string) (string, error) {
	var argv []string
	if b := env.getenv("BROWSER"); b != "" {
		// $BROWSER may list several, separated by ':'; "%s" marks where
		// the URL goes (as Python's webbrowser reads it).
		first, _, _ := strings.Cut(b, ":")
		argv = strings.Fields(first)
		if i := indexOf(argv, "%s"); i >= 0 {
			argv[i] = u
		} else {
			argv = append(argv, u)
		}
	} else if env.getenv("SSH_CONNECTION") == "" {
		switch runtime.GOOS {
		case "darwin":
			argv = []string{"open", u}
		case "windows":
			argv = []string{"rundll32", "url.dll,FileProtocolHandler", u}
		default:
			if p, err := exec.LookPath("xdg-open"); err == nil {
				argv = []string{p, u}
			}
		}
	}
	if len(argv) == 0 {
		return "", nil
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = nil, os.Stderr
	if err := cmd.Start(); err != nil {
		return argv[0], err
	}
	go cmd.Wait() // reap it whenever it ends
	return argv[0], nil
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
