package api

// Call policy (issue 32, item 4): Settings.Policy decides, per tool,
// whether a call from an agent runs (allow), waits for a person (ask) or
// is refused (deny); every decision is in the call log.

// Policy actions.
const (
	PolicyAllow = "allow"
	PolicyAsk   = "ask"
	PolicyDeny  = "deny"
)

// Decision outcomes.
const (
	OutcomeAllowed  = "allowed"   // the policy lets it run
	OutcomeApproved = "approved"  // asked; a person approved it
	OutcomeDenied   = "denied"    // the policy refuses it, or a person declined
	OutcomeTimedOut = "timed_out" // asked; nobody answered in time
	OutcomeNoOne    = "no_one"    // asked; nobody could be asked
)

// Decision is what a session's call policy made of one call: the call
// log's "policy".
type Decision struct {
	// Rule is the rule that matched ("fs.write_*=ask"); empty when none
	// did and the call was allowed by default.
	Rule    string `json:"rule,omitempty"`
	Action  string `json:"action"`
	Outcome string `json:"outcome"`
	// By is who answered an ask: "repl" (the Commander), "mcp:NAME" (the
	// calling MCP client), with " (remembered)" for an approval given
	// earlier for the same call.
	By string `json:"by,omitempty"`
	// Reason says why a call was not run, as its caller was told.
	Reason string `json:"reason,omitempty"`
}

// MetaApproval is the _meta key of an elicitation that asks a person to
// approve a call; its value is an Approval. A client that knows it (the
// Commander) shows its own dialog; any other shows the message and form.
const MetaApproval = "dev.nerve/approval"

// Approval is the call a person is asked to approve.
type Approval struct {
	Caller    string         `json:"caller"`
	Node      string         `json:"node"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments,omitempty"`
	Rule      string         `json:"rule"`
	// Remember is how long, in seconds, an approval with "remember" lets
	// the same call (same tool, same arguments) run again without asking.
	Remember int `json:"remember"`
}

// ApprovalRemember is the field of an approval's form that, accepted as
// true, remembers the approval (Approval.Remember).
const ApprovalRemember = "remember"
