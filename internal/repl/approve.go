package repl

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/api"
)

// approvalOf returns the call an elicitation asks the person to approve
// (issue 32, item 4: the session's call policy asks before a risky call),
// or nil for any other elicitation.
func approvalOf(params json.RawMessage) *api.Approval {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || p.Meta[api.MetaApproval] == nil {
		return nil
	}
	var a api.Approval
	if json.Unmarshal(p.Meta[api.MetaApproval], &a) != nil || a.Node == "" {
		return nil
	}
	return &a
}

// answerApproval asks the person whether the call a may run, showing its
// exact arguments: once, again for a while (the same tool with the same
// arguments), or not at all.
func (r *repl) answerApproval(q *ask, a *api.Approval) askAnswer {
	st := r.style
	fmt.Fprintf(r.out, "%s\n", paint(st, st.Bold+st.Yellow, fmt.Sprintf("? %s wants to call @%s %s", a.Caller, a.Node, a.Tool)))
	fmt.Fprintf(r.out, "  %s\n", paint(st, st.Dim, "the session's policy asks first: "+a.Rule))
	args, _ := json.MarshalIndent(a.Arguments, "  ", "  ")
	if a.Arguments == nil {
		args = []byte("{}")
	}
	fmt.Fprintf(r.out, "  %s\n", args)
	minutes := a.Remember / 60
	fmt.Fprintf(r.out, "  [a]llow once  allow for %d [m]inutes (same tool, same arguments)  [d]eny\n", minutes)
	done := func(res *mcp.ElicitResult, what string) askAnswer {
		if q.withdrawn() == nil {
			fmt.Fprintln(r.out, paint(st, st.Dim, "  → "+what))
		}
		return askAnswer{result: res}
	}
	c, err := r.choose("approve> ", "amd", "")
	if err != nil {
		return done(elicitDecline(), "denied")
	}
	switch c {
	case "a":
		return done(elicitAccept(nil), "allowed once")
	case "m":
		return done(elicitAccept(map[string]any{api.ApprovalRemember: true}), fmt.Sprintf("allowed, and again for %d minutes", minutes))
	}
	return done(elicitDecline(), "denied")
}
