package claude

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/nerve-dev/nerve/pkg/node"
)

// Kind is the node kind name.
const Kind = "claude"

// DefaultTimeout bounds one ask_claude call unless Options.Timeout says
// otherwise; a turn still running then is interrupted.
const DefaultTimeout = 30 * time.Minute

// Options are the kind-specific settings of a claude node (Spec.Options).
// The command line maps its flags onto them:
//
//	--mcp-config F          MCPConfig (a file in any format nerve reads, or inline JSON)
//	--strict-mcp-config     StrictMCPConfig
//	--session-tools         SessionTools
//	--fork-from NODE        ForkFromSession (NODE's session id, read from its Spec.State)
//	--permission-mode MODE  PermissionMode
//	--timeout D             Timeout
//	--session-id UUID       SessionID
type Options struct {
	// MCPConfig is an MCP config file path, or inline JSON (starting with
	// '{'), in any format internal/mcpconf reads. ${VAR}s are expanded when
	// the node starts; the spec keeps them unexpanded.
	MCPConfig string `json:"mcp_config,omitempty"`
	// StrictMCPConfig passes --strict-mcp-config: Claude uses only the
	// servers nerve gives it, not the user's own configuration.
	StrictMCPConfig bool `json:"strict_mcp_config,omitempty"`
	// SessionTools adds the session's own MCP endpoint (server name
	// "nerve") so Claude can call every other node's tools.
	SessionTools bool `json:"session_tools,omitempty"`
	// ForkFromSession is a Claude session id to start from: the first start
	// resumes it with --fork-session into this node's own session id.
	ForkFromSession string `json:"fork_from_session,omitempty"`
	// PermissionMode is passed as --permission-mode (acceptEdits, auto,
	// bypassPermissions, manual, dontAsk, plan). Empty leaves it to
	// the user's Claude settings. Whatever the mode, a permission prompt
	// never hangs a call: nerve denies any question Claude asks its host.
	PermissionMode string `json:"permission_mode,omitempty"`
	// Timeout bounds one call; 0 means DefaultTimeout.
	Timeout node.Duration `json:"timeout,omitempty"`
	// SessionID is the Claude session id of the node's conversation; empty
	// means nerve picks a fresh UUID on first start. Once the node has
	// started, Spec.State holds the id in use and wins over this field.
	SessionID string `json:"session_id,omitempty"`
}

// permissionModes are the values Claude Code 2.1.330 accepts.
var permissionModes = []string{"acceptEdits", "auto", "bypassPermissions", "dontAsk", "manual", "plan"}

func decodeOptions(spec *node.Spec) (Options, error) {
	var o Options
	if err := spec.DecodeOptions(&o); err != nil {
		return o, err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("options of claude node %q: "+format, append([]any{spec.ID}, args...)...)
	}
	if o.Timeout < 0 {
		return o, bad("timeout %s is negative (use e.g. \"10m\", or leave it out for %s)", time.Duration(o.Timeout), DefaultTimeout)
	}
	if o.Timeout == 0 {
		o.Timeout = node.Duration(DefaultTimeout)
	}
	if o.PermissionMode != "" && !slices.Contains(permissionModes, o.PermissionMode) {
		return o, bad("permission_mode %q is not one Claude Code knows (use one of %s)", o.PermissionMode, strings.Join(permissionModes, ", "))
	}
	for name, id := range map[string]string{"session_id": o.SessionID, "fork_from_session": o.ForkFromSession} {
		if id != "" && uuid.Validate(id) != nil {
			return o, bad("%s %q is not a UUID (Claude Code session ids look like 123e4567-e89b-12d3-a456-426614174000)", name, id)
		}
	}
	return o, nil
}

// persisted is what the node keeps in Spec.State across daemon restarts.
type persisted struct {
	// SessionID is the Claude session id of the conversation.
	SessionID string `json:"session_id"`
	// Started is set once a message was sent: Claude has a transcript
	// under that id, so the next start resumes it (--resume) rather than
	// creating it (--session-id, which Claude refuses for an existing id).
	Started bool `json:"started,omitempty"`
	// CostUSD and Turns add up over the node's whole life.
	CostUSD float64 `json:"cost_usd,omitempty"`
	Turns   int64   `json:"turns,omitempty"`
}

func decodeState(spec *node.Spec) (persisted, error) {
	var p persisted
	if len(spec.State) == 0 {
		return p, nil
	}
	if err := json.Unmarshal(spec.State, &p); err != nil {
		return p, fmt.Errorf("saved state of claude node %q: %w (remove the node and add it again)", spec.ID, err)
	}
	return p, nil
}

// DefaultCommand is the command run when the spec has none.
var DefaultCommand = []string{"claude"}

// protocolFlags are the flags the node needs, each with its value ("" for a
// switch). They are appended to the user's command unless already there.
var protocolFlags = [][2]string{
	{"--print", ""},
	{"--input-format", "stream-json"},
	{"--output-format", "stream-json"},
	{"--verbose", ""},
	{"--include-partial-messages", ""},
}

// aliases maps a short flag to its long name.
var aliases = map[string]string{"-p": "--print", "-r": "--resume"}

// ownedFlags are managed by nerve; a command that sets them is refused
// with what to do instead.
var ownedFlags = map[string]string{
	"--session-id":   "nerve gives each node its own session id (use the session_id option)",
	"--resume":       "nerve resumes the node's conversation itself (use --fork-from NODE to start from another one)",
	"--continue":     "nerve resumes the node's conversation itself",
	"-c":             "nerve resumes the node's conversation itself",
	"--fork-session": "use --fork-from NODE",
}

// flagValue returns the value of flag in args (both "--f v" and "--f=v"),
// and whether it is present.
func flagValue(args []string, flag string) (string, bool) {
	for i, a := range args {
		if long, ok := aliases[a]; ok {
			a = long
		}
		if a == flag {
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				return args[i+1], true
			}
			return "", true
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
	}
	return "", false
}

// launch is what one start of the process needs to know.
type launch struct {
	sessionID  string
	resume     bool   // --resume sessionID
	forkFrom   string // --resume forkFrom --fork-session --session-id sessionID
	mcpConfig  string // path of the file nerve wrote, or ""
	strictMCP  bool
	permission string
}

// buildArgv returns the command with the flags the node needs appended,
// never duplicated. Flags go at the end so a wrapper command (`env X=1
// claude`, `npx claude`) still works.
func buildArgv(command []string, l launch) ([]string, error) {
	if len(command) == 0 {
		command = DefaultCommand
	}
	user := command[1:]
	for _, a := range user {
		name, _, _ := strings.Cut(a, "=")
		if long, ok := aliases[name]; ok {
			name = long
		}
		if why, ok := ownedFlags[name]; ok {
			return nil, fmt.Errorf("the command sets %s, which the claude node manages: %s; remove it from the command", name, why)
		}
	}
	argv := slices.Clone(command)
	for _, f := range protocolFlags {
		v, ok := flagValue(user, f[0])
		switch {
		case !ok:
			argv = append(argv, f[0])
			if f[1] != "" {
				argv = append(argv, f[1])
			}
		case f[1] != "" && v != f[1]:
			return nil, fmt.Errorf("the command sets %s %s, but the claude node speaks %s %s: remove it from the command", f[0], v, f[0], f[1])
		}
	}
	switch {
	case l.forkFrom != "":
		argv = append(argv, "--resume", l.forkFrom, "--fork-session", "--session-id", l.sessionID)
	case l.resume:
		argv = append(argv, "--resume", l.sessionID)
	default:
		argv = append(argv, "--session-id", l.sessionID)
	}
	if l.permission != "" {
		if v, ok := flagValue(user, "--permission-mode"); ok && v != l.permission {
			return nil, fmt.Errorf("the command sets --permission-mode %s and the node's options say %s: keep one", v, l.permission)
		} else if !ok {
			argv = append(argv, "--permission-mode", l.permission)
		}
	}
	if l.strictMCP {
		if _, ok := flagValue(user, "--strict-mcp-config"); !ok {
			argv = append(argv, "--strict-mcp-config")
		}
	}
	if l.mcpConfig != "" {
		// Last: --mcp-config takes several values, up to the next flag.
		argv = append(argv, "--mcp-config", l.mcpConfig)
	}
	return argv, nil
}
