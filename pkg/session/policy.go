package session

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
)

// The call policy (issue 32, item 4). Settings.Policy's rules decide, for
// a call from an agent, whether it runs, is refused, or waits for a person
// to approve it: the calling MCP client when it can elicit (WithApprover,
// set by the MCP server), else whoever the session's approver reaches (the
// daemon's: a Commander). A person's own calls (personal) always run. A
// refused call is an isError result that says why; the decision goes to
// the call log (CallInfo.Decision).

// Decision is pkg/api's: what the policy made of one call.
type Decision = api.Decision

// DefaultAskTimeout is how long an ask waits for a person unless the
// session's ask_timeout says otherwise.
const DefaultAskTimeout = 2 * time.Minute

// RememberFor is how long an approval given with "remember" lets the same
// call (same tool, same arguments) run again without asking.
const RememberFor = 10 * time.Minute

// Policy is a session's call policy: rules in order, the first that
// matches a call deciding it. The zero Policy allows everything.
type Policy struct {
	rules []policyRule
}

type policyRule struct {
	src, glob, action string
}

// ParsePolicy reads comma-separated GLOB=ACTION rules: GLOB over node.tool
// as the expose filter reads it (node.MatchTool), ACTION allow, ask or
// deny. "" is the zero Policy.
func ParsePolicy(rules string) (Policy, error) {
	var p Policy
	for item := range strings.SplitSeq(rules, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		glob, action, ok := strings.Cut(item, "=")
		glob, action = strings.TrimSpace(glob), strings.TrimSpace(action)
		if !ok || glob == "" {
			return Policy{}, fmt.Errorf("policy rule %q: write GLOB=ACTION, e.g. fs.write_*=ask", item)
		}
		switch action {
		case api.PolicyAllow, api.PolicyAsk, api.PolicyDeny:
		default:
			return Policy{}, fmt.Errorf("policy rule %q: the action is allow, ask or deny, not %q", item, action)
		}
		if _, err := path.Match(glob, ""); err != nil {
			return Policy{}, fmt.Errorf("policy rule %q: glob %q is malformed (%w): use * ? and [a-z] over node.tool", item, glob, err)
		}
		p.rules = append(p.rules, policyRule{src: glob + "=" + action, glob: glob, action: action})
	}
	return p, nil
}

// IsZero reports whether p has no rules.
func (p Policy) IsZero() bool { return len(p.rules) == 0 }

// String is p as rules, normalised.
func (p Policy) String() string {
	var b strings.Builder
	for i, r := range p.rules {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(r.src)
	}
	return b.String()
}

// Decide returns the action for node id's tool, which may go by several
// names (its shown name and its own), and the rule that chose it ("" when
// none did: allow).
func (p Policy) Decide(id string, names ...string) (action, rule string) {
	for _, r := range p.rules {
		for _, n := range names {
			if node.MatchTool(r.glob, id, n) {
				return r.action, r.src
			}
		}
	}
	return api.PolicyAllow, ""
}

// Approver asks a person whether a call may run. It returns
// ErrNoOneToAsk when it reaches nobody.
type Approver func(ctx context.Context, req *ApprovalRequest) (Approval, error)

// ApprovalRequest is one call a person is asked about: exactly what would
// run.
type ApprovalRequest struct {
	Caller node.Caller
	// Node and Tool name the tool as its caller named it.
	Node, Tool string
	// Arguments are the arguments the tool would get (fixed ones too).
	Arguments json.RawMessage
	// Rule is the policy's rule that asks.
	Rule string
}

// Approval is a person's answer.
type Approval struct {
	Allow bool
	// By is who answered ("repl", "mcp:claude-code").
	By string
	// Remember: allow the same call again for RememberFor.
	Remember bool
	// Reason is why it was declined, for the caller.
	Reason string
}

type approverKey struct{}

// WithApprover returns ctx whose calls, and the calls made on their
// behalf (an llm node's, a graph's), ask a first: the MCP server sets the
// calling client's elicitation.
func WithApprover(ctx context.Context, a Approver) context.Context {
	return context.WithValue(ctx, approverKey{}, a)
}

// SetApprover sets whom the session asks when a call's context names no
// approver (the daemon: a Commander); nil asks nobody.
func (s *Session) SetApprover(a Approver) {
	s.policy.mu.Lock()
	s.policy.approve = a
	s.policy.mu.Unlock()
}

// policyState is the session's policy as last parsed, its approver and
// the calls approved with "remember".
type policyState struct {
	// mu guards the fields below.
	mu         sync.Mutex
	src        string
	parsed     Policy
	approve    Approver
	remembered map[string]remembered
}

// remembered is an approval given with "remember": by whom, until when.
type remembered struct {
	by    string
	until time.Time
}

// current returns the policy of settings src, parsed once per change.
func (p *policyState) current(src string) Policy {
	p.mu.Lock()
	defer p.mu.Unlock()
	if src != p.src {
		p.parsed, _ = ParsePolicy(src) // checked when set; a bad one is no policy
		p.src = src
	}
	return p.parsed
}

// personal reports whether c is a person's own call, which no policy
// holds up: the Commander, `nerve call`, and programs on the local API
// (the dashboard is one) — which run as the person and could change the
// policy themselves, so holding them up would protect nothing.
func personal(c node.Caller) bool {
	return c.Kind == node.CallerREPL || c.Kind == node.CallerCLI || c.Kind == node.CallerAPI
}

// gate applies the session's policy to a call of node id's tool, shown
// under shown and known to the node as real, that would get args. It
// returns a result when the call must not run (isError, saying why), and
// fills dec with the decision when the policy had one to make.
func (s *Session) gate(ctx context.Context, id, shown, real string, args json.RawMessage, dec *Decision) *mcp.CallToolResult {
	st := s.Settings()
	if st.Policy == "" {
		return nil
	}
	caller, _ := node.CallerFrom(ctx)
	if personal(caller) {
		return nil
	}
	p := s.policy.current(st.Policy)
	if p.IsZero() {
		return nil
	}
	action, rule := p.Decide(id, shown, real)
	d, res := s.decide(ctx, caller, action, rule, id, shown, args, time.Duration(st.AskTimeout))
	if dec != nil {
		*dec = d
	}
	return res
}

// decide carries out the policy's action for one call (gate): the
// decision, and the result when the call must not run.
func (s *Session) decide(ctx context.Context, caller node.Caller, action, rule, id, shown string, args json.RawMessage, timeout time.Duration) (Decision, *mcp.CallToolResult) {
	d := Decision{Rule: rule, Action: action, Outcome: api.OutcomeAllowed}
	if action == api.PolicyAllow {
		return d, nil
	}
	name := node.QualifiedName(id, shown)
	refuse := func(outcome, reason string) (Decision, *mcp.CallToolResult) {
		d.Outcome, d.Reason = outcome, reason
		return d, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: reason}}}
	}
	if action == api.PolicyDeny {
		return refuse(api.OutcomeDenied, fmt.Sprintf("nerve's policy refuses calls to %s (rule %s): it did not run. A person may run it from the Commander, or change the policy with `nerve session set policy`.", name, rule))
	}
	key := rememberKey(id, shown, args)
	if by, ok := s.policy.recalled(key); ok {
		d.Outcome, d.By = api.OutcomeApproved, by+" (remembered)"
		return d, nil
	}
	if timeout <= 0 {
		timeout = DefaultAskTimeout
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := &ApprovalRequest{Caller: caller, Node: id, Tool: shown, Arguments: args, Rule: rule}
	a, err := s.askApproval(actx, req)
	switch {
	case err == nil && a.Allow:
		d.Outcome, d.By = api.OutcomeApproved, a.By
		if a.Remember {
			s.policy.remember(key, a.By)
		}
		return d, nil
	case err == nil:
		d.By = a.By
		why := cmp.Or(a.Reason, "declined")
		return refuse(api.OutcomeDenied, fmt.Sprintf("the person asked to approve this call to %s (at %s) refused it: %s. It did not run.", name, a.By, why))
	case ctx.Err() != nil:
		return refuse(api.OutcomeDenied, fmt.Sprintf("the call to %s was cancelled while it waited for a person's approval: it did not run", name))
	case errors.Is(err, context.DeadlineExceeded):
		return refuse(api.OutcomeTimedOut, fmt.Sprintf("nobody approved this call to %s within %s (nerve's policy asks first: rule %s): it did not run", name, shortDuration(timeout), rule))
	case errors.Is(err, ErrNoOneToAsk):
		return refuse(api.OutcomeNoOne, fmt.Sprintf("this call to %s needs a person's approval (nerve's policy, rule %s) and nobody could be asked: it did not run. Open the Commander (`nerve`) to approve calls, or call from an MCP client that supports elicitation.", name, rule))
	}
	s.log.Warn("asking to approve a call", zap.String("node", id), zap.String("tool", shown), zap.Error(err))
	return refuse(api.OutcomeDenied, fmt.Sprintf("asking a person to approve this call to %s failed (%v): it did not run", name, err))
}

// askApproval asks the context's approver, then the session's.
func (s *Session) askApproval(ctx context.Context, req *ApprovalRequest) (Approval, error) {
	if a, ok := ctx.Value(approverKey{}).(Approver); ok && a != nil {
		ans, err := a(ctx, req)
		if err == nil || ctx.Err() != nil {
			return ans, err
		}
		s.log.Info("the caller's client could not be asked to approve a call; asking the session's", zap.Error(err))
	}
	s.policy.mu.Lock()
	a := s.policy.approve
	s.policy.mu.Unlock()
	if a == nil {
		return Approval{}, ErrNoOneToAsk
	}
	return a(ctx, req)
}

// shortDuration is d without the zero units time.Duration shows ("2m",
// not "2m0s").
func shortDuration(d time.Duration) string {
	s := d.String()
	s, _ = strings.CutSuffix(s, "m0s")
	if len(s) < len(d.String()) {
		s += "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// rememberKey names a call: the tool and its arguments in canonical JSON.
func rememberKey(id, tool string, args json.RawMessage) string {
	var v any
	canon := []byte("{}")
	if len(args) > 0 && json.Unmarshal(args, &v) == nil && v != nil {
		if b, err := json.Marshal(v); err == nil {
			canon = b
		}
	}
	return id + "\x00" + tool + "\x00" + string(canon)
}

func (p *policyState) remember(key, by string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for k, r := range p.remembered {
		if now.After(r.until) {
			delete(p.remembered, k)
		}
	}
	if p.remembered == nil {
		p.remembered = map[string]remembered{}
	}
	p.remembered[key] = remembered{by: by, until: now.Add(RememberFor)}
}

// recalled reports whether the call key was approved with "remember" in
// the last RememberFor, and by whom.
func (p *policyState) recalled(key string) (by string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.remembered[key]
	if !ok || time.Now().After(r.until) {
		return "", false
	}
	return r.by, true
}

// Elicitation is the form that asks a person about req: the MCP server
// sends it to its client, the daemon to a Commander (which shows a dialog
// of its own, from the _meta).
func (req *ApprovalRequest) Elicitation() *mcp.ElicitParams {
	var args map[string]any
	_ = json.Unmarshal(req.Arguments, &args)
	shown, _ := json.MarshalIndent(args, "", "  ")
	if args == nil {
		shown = []byte("{}")
	}
	if len(shown) > 4000 {
		shown = append(shown[:4000:4000], "…"...)
	}
	caller := req.Caller.String()
	if req.Caller.Kind == "" {
		caller = "a program"
	}
	msg := fmt.Sprintf("%s wants to call %s.%s (nerve's policy asks first: %s) with these arguments:\n%s\nAccept to run this call; decline to refuse it.",
		caller, req.Node, req.Tool, req.Rule, shown)
	return &mcp.ElicitParams{
		Meta: mcp.Meta{api.MetaApproval: api.Approval{Caller: caller, Node: req.Node, Tool: req.Tool, Arguments: args,
			Rule: req.Rule, Remember: int(RememberFor / time.Second)}},
		Message: msg,
		RequestedSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%q:{"type":"boolean","title":"Also allow this same call (same tool, same arguments) for the next %d minutes","default":false}}}`,
			api.ApprovalRemember, int(RememberFor/time.Minute))),
	}
}

// ApprovalOf reads the answer to an approval's elicitation, given by by.
func ApprovalOf(res *mcp.ElicitResult, by string) Approval {
	if res == nil || res.Action != "accept" {
		why := "declined"
		if res != nil && res.Action == "cancel" {
			why = "cancelled"
		}
		return Approval{By: by, Reason: why}
	}
	remember, _ := res.Content[api.ApprovalRemember].(bool)
	return Approval{Allow: true, By: by, Remember: remember}
}
