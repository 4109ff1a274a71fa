package mcpnode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// explain turns the error that ended (or prevented) a connection into a
// message a person can act on: what happened, what to try, and the tail of
// the server's stderr. startTimedOut says the start timeout ran out.
func (n *Node) explain(err error, p *process, starting, startTimedOut bool) string {
	var msg string
	when := "unexpectedly"
	if starting {
		when = "during start"
	}
	var syn *json.SyntaxError
	var le *listError
	errText := ""
	if err != nil {
		errText = err.Error()
	}
	how, exited := "", false
	if p != nil {
		how, exited = p.exitedByItself()
	}
	switch {
	case strings.Contains(errText, "maximum line length"):
		limit := n.cfg.maxLine
		if limit == 0 {
			limit = 16 << 20
		}
		msg = fmt.Sprintf("the server wrote a line longer than %d MB on stdout, over nerve's limit for one message; nerve closed the connection (does a tool return something huge? ask it for less)", limit>>20)
	case strings.Contains(errText, "maximum nesting depth"):
		// Before the exit case: a stdio server exits when nerve closes
		// its stdin on this error, and the exit is not what went wrong.
		msg = fmt.Sprintf("the server sent a message nested more than %d levels deep, over nerve's limit for one message; nerve closed the connection (does a tool return something deeply nested? ask it for a flatter answer)", MaxDepth)
	case errors.As(err, &syn) || strings.Contains(errText, "invalid character") || strings.Contains(errText, "invalid trailing data") || strings.Contains(errText, "looking for beginning of value"):
		quote := ""
		if p != nil {
			if s := p.stdout.last(); s != "" {
				quote = fmt.Sprintf(" (%q)", s)
			}
		}
		msg = fmt.Sprintf("the server wrote something that is not JSON-RPC on its stdout%s: a stdio MCP server must write only MCP messages there and its logs to stderr (is this the right command, started in stdio mode?)", quote)
	case starting && startTimedOut && errors.As(err, &le):
		msg = fmt.Sprintf("the server answered initialize but not tools/list within the start timeout of %v (raise it with --start-timeout, option start_timeout, if the server is slow to list its tools)", n.cfg.startTimeout)
	case starting && startTimedOut:
		// Before the exit case: the SDK closes stdin when the wait runs
		// out, and a server may exit on that; the timeout is what happened.
		if p != nil {
			msg = fmt.Sprintf("the server did not answer initialize within the start timeout of %v: is this an MCP server speaking stdio? A server that downloads itself on its first run (npx -y) may need longer: raise it with --start-timeout 5m (option start_timeout), or install the package beforehand", n.cfg.startTimeout)
		} else {
			msg = fmt.Sprintf("the server at %s did not answer initialize within the start timeout of %v: is the URL right and the server up? (a slow server: raise it with --start-timeout, option start_timeout)", n.server.URL, n.cfg.startTimeout)
		}
	case errors.As(err, &le):
		// Before the exit case: a server that failed tools/list may exit
		// when nerve gives up on it; the failed listing is the cause.
		msg = fmt.Sprintf("the server answered initialize, but listing its tools (tools/list) failed %s: %s", when, describeRPCError(le.err))
		if exited {
			msg += fmt.Sprintf("; then it %s", how)
		}
	case exited:
		msg = fmt.Sprintf("the server %s %s", how, when)
		if starting {
			msg += " (check the command, its arguments and its environment; run it by hand to see why)"
		}
	case err == nil || errors.Is(err, io.EOF):
		if p != nil {
			msg = fmt.Sprintf("the server closed its stdout %s", when)
		} else {
			msg = fmt.Sprintf("the server closed the connection %s", when)
		}
	case errors.Is(err, ErrAuthorizationRequired) || strings.Contains(errText, ErrAuthorizationRequired.Error()):
		msg = fmt.Sprintf("the server at %s needs you to sign in (OAuth) before nerve may use it: run `nerve node auth %s` to authorize nerve in a browser, or give the node a token (--header 'Authorization: Bearer ${TOKEN}')", n.server.URL, n.ID())
		if why := n.refreshFailed.Load(); why != nil {
			msg = fmt.Sprintf("the saved sign-in to %s expired and refreshing it failed (%s): run `nerve node auth %s` to sign in again", n.server.URL, *why, n.ID())
		}
	case p == nil && errors.Is(err, errConnRefused):
		msg = fmt.Sprintf("connection refused at %s: is the server running?", n.server.URL)
		if !starting {
			msg += " (the next call reconnects)"
		}
	case p == nil && starting:
		msg = fmt.Sprintf("connecting to %s: %v (is the URL right, the server up, and the transport %q the one it speaks?)", n.server.URL, err, n.server.Transport)
	default:
		msg = fmt.Sprintf("the connection to the server failed %s: %v", when, err)
	}
	if p != nil {
		msg += p.StderrTail(10)
	}
	return msg
}

// listError is a failed tools/list: at start it is the cause of the
// node's ERROR, whatever the server does next.
type listError struct{ err error }

func (e *listError) Error() string { return "listing the server's tools: " + e.err.Error() }
func (e *listError) Unwrap() error { return e.err }
