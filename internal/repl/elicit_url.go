package repl

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answerURL runs the dialog of a URL-mode elicitation (MCP 2025-11-25): a
// server asks the person to open a page — a sign-in, a payment — whose
// answer must not pass through nerve. The Commander shows the page's
// host and whole URL, opens it only when the person says so (the spec:
// never without consent), and waits until the person is done there or
// cancels; done is "accept", which tells the server to go on (issue 27).
func (r *repl) answerURL(q *ask, p *elicitRequest) askAnswer {
	st := r.style
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		r.printErr(fmt.Errorf("@%s asked you to open %q, which is not a web page's URL (declined)", q.node, p.URL))
		return r.urlDone(q, elicitDecline())
	}
	fmt.Fprintf(r.out, "%s\n", paint(st, st.Bold+st.Yellow, fmt.Sprintf("? @%s asks you to open a page on %s:", q.node, u.Hostname())))
	if p.Message != "" {
		fmt.Fprintf(r.out, "  %s\n", indentRest(p.Message, "  "))
	}
	fmt.Fprintf(r.out, "  %s\n", paint(st, st.Bold, p.URL))
	fmt.Fprintln(r.out, paint(st, st.Dim, "  What you do there goes to the server, not through nerve. Open it only if you trust it."))
	keys, menu := "odnc", "  [o]pen it in your browser  [d]one (I opened it myself)  [n]o, decline  [c]ancel"
	if r.opts.OpenURL == nil {
		keys, menu = "dnc", "  open it yourself, then: [d]one  [n]o, decline  [c]ancel"
	}
	fmt.Fprintln(r.out, menu)
	for {
		c, err := r.choose("elicit> ", keys, "")
		if err != nil {
			return r.urlRefused(q, err)
		}
		switch c {
		case "n":
			return r.urlDone(q, elicitDecline())
		case "c":
			return r.urlDone(q, elicitCancel())
		case "d":
			return r.urlDone(q, &mcp.ElicitResult{Action: "accept"})
		}
		// o: open it, then wait for the person to finish there.
		how, err := r.opts.OpenURL(p.URL)
		switch {
		case err != nil:
			r.printErr(fmt.Errorf("opening the page with %s: %w: open it yourself", how, err))
		case how == "":
			fmt.Fprintln(r.out, "  no browser to open it with ($BROWSER is not set): open it yourself")
		default:
			fmt.Fprintf(r.out, "  opened with %s\n", how)
		}
		fmt.Fprintln(r.out, "  when you are finished there: [d]one  [c]ancel")
		c, err = r.choose("elicit> ", "dc", "")
		if err != nil {
			return r.urlRefused(q, err)
		}
		if c == "d" {
			return r.urlDone(q, &mcp.ElicitResult{Action: "accept"})
		}
		return r.urlDone(q, elicitCancel())
	}
}

// urlDone says what the server is told and returns it.
func (r *repl) urlDone(q *ask, res *mcp.ElicitResult) askAnswer {
	if q.withdrawn() != nil {
		return askAnswer{result: res} // answerAsk says why; nothing is sent
	}
	what := map[string]string{"accept": "done", "decline": "declined", "cancel": "cancelled"}[res.Action]
	fmt.Fprintln(r.out, paint(r.style, r.style.Dim, fmt.Sprintf("  → %s; @%s is told so", what, q.node)))
	return askAnswer{result: res}
}

// urlRefused is the answer when the dialog ended without a choice: Ctrl-D
// cancels, Ctrl-C (or anything else) declines.
func (r *repl) urlRefused(q *ask, err error) askAnswer {
	if errors.Is(err, errCancel) {
		return r.urlDone(q, elicitCancel())
	}
	if !errors.Is(err, errDeclined) && q.withdrawn() == nil {
		r.printErr(err)
	}
	return r.urlDone(q, elicitDecline())
}
