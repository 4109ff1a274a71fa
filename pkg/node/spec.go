package node

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/pkg/api"
)

// Spec is the serialisable description a node is built from. Sessions save
// specs (with ${VAR} references unexpanded) and rebuild nodes from them.
type Spec = api.Spec

// idPattern is compiled on first use, not at start-up: x{0,62} compiles
// to 62 nested repetitions, ~740 allocations and ~1 ms of every nerve
// process's start (GODEBUG=inittrace=1), a `nerve call` included.
var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`) })

// ValidID reports whether id is a valid node id; session names follow
// the same rule.
func ValidID(id string) bool { return idPattern().MatchString(id) }

// ValidateID checks a node id: lower-case letters, digits, '_' and '-',
// starting with a letter or digit, at most 63 characters, no dots.
func ValidateID(id string) error {
	if ValidID(id) {
		return nil
	}
	return fmt.Errorf("invalid node id %q: use 1-63 lower-case letters, digits, '_' or '-', starting with a letter or digit (e.g. %q)", id, suggestID(id))
}

func suggestID(id string) string {
	b := make([]byte, 0, len(id))
	for _, r := range id {
		switch {
		case r >= 'A' && r <= 'Z':
			b = append(b, byte(r-'A'+'a'))
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b = append(b, byte(r))
		default:
			b = append(b, '-')
		}
	}
	for len(b) > 0 && (b[0] == '-' || b[0] == '_') {
		b = b[1:]
	}
	if len(b) > 63 {
		b = b[:63]
	}
	if len(b) == 0 {
		return "node1"
	}
	return string(b)
}

// Env is what a session gives each node it builds. Every field may be nil
// or zero; nodes must cope.
type Env struct {
	// Session is the name of the session the node belongs to.
	Session string
	// Logger is the node's logger (named after it).
	Logger *zap.Logger
	// Dir is a private folder the node may keep files in (created 0700 by
	// the session on demand via os.MkdirAll).
	Dir string
	// OnState is told about every state transition; nodes pass it to their
	// Machine.
	OnState StateFunc
	// OnToolsChanged is called when the node's tool (resource, prompt) list
	// changed without a state change.
	OnToolsChanged func()
	// SaveState persists node-owned state into the node's Spec.State.
	SaveState func(state json.RawMessage) error
	// Hooks answers requests a node's peer makes of the person (sampling,
	// elicitation). Nil hooks decline.
	Hooks Hooks
	// Tools lets a node call the tools of the other nodes of its session
	// (LLM agents, graphs). Nil when the session offers none.
	Tools ToolCaller
	// Vars is the environment ${VAR} references resolve against and the
	// node's processes get (Lookup, Environ); nil means the process's.
	Vars Vars
	// Idle, if set, is the session's idle time for nodes that stop when
	// unused and have no idle setting of their own (0: never).
	Idle func() time.Duration
	// MCPEndpoint, if set, returns the session's own MCP endpoint, a
	// streamable HTTP URL and its bearer token, for a node whose process
	// calls the session's tools back (claude --session-tools); ok is false
	// while none serves the session.
	MCPEndpoint func() (url, token string, ok bool)
}

// Lazy is a node that knows its tools without running (a catalogue saved
// the last time it ran) and starts on its first call. The session lists
// the tools of a Catalogued node that is CREATED or STOPPED, does not
// start it on restore when StartsLazily, and lets its call start it.
type Lazy interface {
	Catalogued() bool
	StartsLazily() bool
}

// Reviver is a node in ERROR that its next request may bring back by
// itself (an mcp node whose remote server was unreachable reconnects):
// the session lets such a request through to the node instead of failing
// it as not ready.
type Reviver interface {
	Revivable() bool
}

// Syncer is a node that can refresh its catalogue on demand: start if it
// is not running, list what its peer offers, save it, and stop again if
// it was not running.
type Syncer interface {
	Sync(ctx context.Context) error
}

// Log returns e.Logger or a no-op logger.
func (e Env) Log() *zap.Logger {
	if e.Logger != nil {
		return e.Logger
	}
	return zap.NewNop()
}

// Hooks are the session's answers to requests from a node's peer that need a
// person. Each is called with the asking node's id; implementations must
// honour ctx and must never block forever.
type Hooks interface {
	Sample(ctx context.Context, nodeID string, req *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	Elicit(ctx context.Context, nodeID string, req *mcp.ElicitParams) (*mcp.ElicitResult, error)
}

// ToolCaller is the session seen from a node that calls other nodes' tools.
type ToolCaller interface {
	// Toolset returns the session's current tools.
	Toolset(ctx context.Context) *Toolset
	// CallTool calls a tool by qualified ("node.tool") or LLM-safe name.
	CallTool(ctx context.Context, name string, args json.RawMessage, observe func(CallEvent)) (*mcp.CallToolResult, error)
}

// Factory builds a node of one kind from its spec. It must validate the spec
// and return quickly; the node is started later with Start.
type Factory func(spec Spec, env Env) (Node, error)

// Duration is a time.Duration that reads and writes as a Go duration string
// ("30s") in JSON, and also accepts a number of seconds.
type Duration = api.Duration

// Catalogue is what a spec is checked against before it joins a session
// (Check): the tools of the session's other nodes, whatever their state
// (a node that is starting or in ERROR still lists its tools, an mcp node
// its catalogue), the nodes whose tools cannot be listed now, and the
// other nodes' specs.
type Catalogue struct {
	// Tools maps qualified names (node.tool) to the tools of the other nodes.
	Tools map[string]*mcp.Tool
	// Down maps the other nodes whose tools cannot be listed now to why:
	// calls of their tools cannot be checked.
	Down map[string]string
	// Specs are the other nodes' specs, by id (a graph reads those of the
	// graphs it calls).
	Specs map[string]Spec
}

// Check is a kind's check of a spec against its session, run before the
// spec is added or replaces a node at a person's or a program's request —
// never on a restore, when the nodes it uses may not be back yet. It
// returns every mistake in one error and warnings: what a person should
// see but that does not stop the spec. A kind registers it beside its
// Factory (session.Registry.RegisterCheck).
type Check func(ctx context.Context, spec Spec, c *Catalogue) (warnings []string, err error)
