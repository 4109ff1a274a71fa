package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nerve-dev/nerve/internal/mcpconf"
	"github.com/nerve-dev/nerve/internal/nodes/claude"
	"github.com/nerve-dev/nerve/internal/nodes/llm"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Node kinds with flags of their own.
const (
	kindBash   = "bash"
	kindMCP    = mcpconf.Kind
	kindLLM    = llm.Kind
	kindClaude = claude.Kind
)

var (
	processKinds = []string{kindBash, kindClaude, kindMCP}
	timeoutKinds = []string{kindBash, kindClaude, kindLLM, kindMCP}
	headerKinds  = []string{kindLLM, kindMCP}
	onlyMCP      = []string{kindMCP}
	onlyLLM      = []string{kindLLM}
	onlyClaude   = []string{kindClaude}
)

// claudePermissionModes are the values Claude Code accepts for
// --permission-mode, offered by completion; the claude kind checks them.
var claudePermissionModes = []string{"acceptEdits", "auto", "bypassPermissions", "dontAsk", "manual", "plan"}

// nodeAddFlags are the flags of `node add`, each for the kinds it names.
func nodeAddFlags() []*Flag {
	return []*Flag{
		{Name: "cwd", Value: "DIR", Usage: "working folder of the node's process (default: the current folder)", Kinds: processKinds},
		{Name: "env", Value: "KEY=VALUE", Usage: "environment variable for the node's process; VALUE may hold ${VAR}", Repeat: true, Kinds: processKinds},
		{Name: "timeout", Value: "DURATION", Usage: "bound on one call (llm: on one request to the model), e.g. 90s or 10m", Kinds: timeoutKinds},

		{Name: "url", Value: "URL", Usage: "the server's URL (streamable HTTP or SSE) instead of a command", Kinds: onlyMCP},
		{Name: "transport", Value: "stdio|http|sse", Values: []string{"http", "sse", "stdio"}, Usage: "default: stdio for a command; http for --url (sse for a URL ending in /sse)", Kinds: onlyMCP},
		{Name: "header", Value: "'KEY: VALUE'", Usage: "HTTP header sent to the server; VALUE may hold ${VAR}", Repeat: true, Kinds: headerKinds},
		{Name: "root", Value: "DIR", Usage: "folder offered to the server as an MCP root; with none, nerve offers no roots and the server keeps the folders on its command line", Repeat: true, Kinds: onlyMCP},
		{Name: "start-timeout", Value: "DURATION", Usage: "bound on the server's start (connect, initialize, list), default 30s; e.g. 5m for an `npx -y` server's first run, which downloads it", Kinds: onlyMCP},
		{Name: "ping", Value: "DURATION|off", Usage: "ping an idle stdio server this often to find it hung (default 30s); off for a server that does not answer ping", Kinds: onlyMCP},
		{Name: "restart", Value: "on-failure", Values: []string{"on-failure"}, Usage: "come back from ERROR by itself, retrying with backoff (1s doubling to 1m)", Kinds: onlyMCP},
		{Name: "inherit-env", Usage: "give a stdio server nerve's whole environment instead of the safe list (PATH, HOME, ...) plus --env", Kinds: onlyMCP},

		{Name: "base-url", Value: "URL", Usage: "root of the model's API, e.g. http://127.0.0.1:8080/v1 (required for --provider openai; anthropic defaults to https://api.anthropic.com)", Kinds: onlyLLM},
		{Name: "model", Value: "MODEL", Usage: "model name the server knows (required)", Kinds: onlyLLM},
		{Name: "api-key", Value: "'${VAR}'", Usage: "API key as a reference to an environment variable of the daemon, in single quotes", Kinds: onlyLLM},
		{Name: "allow-literal-key", Usage: "accept a literal --api-key (it is saved in clear text in the session's file)", Kinds: onlyLLM},
		{Name: "tools", Value: "LIST", Usage: "session tools the model may call: node ids, globs (fs.read_*), * for all; comma-separated", Kinds: onlyLLM},
		{Name: "discover", Usage: "offer the model search_tools and call_tool instead of every tool --tools chooses (for many tools)", Kinds: onlyLLM},
		{Name: "system", Value: "TEXT", Usage: "system prompt", Kinds: onlyLLM},
		{Name: "max-steps", Value: "N", Usage: fmt.Sprintf("model requests per chat call at most (default %d)", llm.DefaultMaxSteps), Kinds: onlyLLM},
		{Name: "temperature", Value: "X", Usage: "sampling temperature", Kinds: onlyLLM},
		{Name: "max-tokens", Value: "N", Usage: "bound on each answer's tokens", Kinds: onlyLLM},
		{Name: "context-tokens", Value: "N", Usage: fmt.Sprintf("conversation budget in tokens (default %d)", llm.DefaultContextTokens), Kinds: onlyLLM},
		{Name: "provider", Value: "openai|anthropic", Values: []string{"anthropic", "openai"}, Usage: "API dialect: openai (default; every OpenAI-compatible server) or anthropic (the Messages API: --base-url https://api.anthropic.com --api-key '${ANTHROPIC_API_KEY}')", Kinds: onlyLLM},
		{Name: "stream", Usage: "stream answers (default); --stream=false for servers that stream badly", Kinds: onlyLLM},

		{Name: "mcp-config", Value: "FILE", Usage: "MCP servers for Claude: a config file in any format nerve reads, or inline JSON", Kinds: onlyClaude},
		{Name: "strict-mcp-config", Usage: "Claude uses only the servers nerve gives it, not the user's own", Kinds: onlyClaude},
		{Name: "session-tools", Usage: "give Claude the session's tools (every other node's) through nerve's MCP endpoint", Kinds: onlyClaude},
		{Name: "fork-from", Value: "NODE", Usage: "start from a copy of claude node NODE's conversation", Kinds: onlyClaude},
		{Name: "permission-mode", Value: "MODE", Values: claudePermissionModes, Usage: "Claude's --permission-mode (" + strings.Join(claudePermissionModes, ", ") + ")", Kinds: onlyClaude},
		{Name: "session-id", Value: "UUID", Usage: "Claude session id of the node's conversation (default: a fresh one)", Kinds: onlyClaude},

		{Name: "option", Value: "KEY=VALUE", Usage: "kind-specific option (VALUE read as JSON when it parses)", Repeat: true},
		{Name: "options", Value: "JSON", Usage: "kind-specific options as a JSON object"},
	}
}

func nodeAddCmd() *Command {
	return &Command{
		Name:    "add",
		Summary: "add a node and start it",
		Usage:   "node add KIND NAME [flags] [-- COMMAND ARGS...]",
		Help: `KIND is a node kind (see ` + "`nerve node kinds`" + `); NAME is the node's id:
lower-case letters, digits, '_' and '-'. ${VAR} and ${VAR:-default} in the
command, env, cwd, url, headers and api key are kept as written and
expanded when the node starts. Each kind has its own flags: see
` + "`nerve node add KIND --help`" + `.

Examples:
  nerve node add bash sh --cwd /srv
  nerve node add mcp fs -- npx -y @modelcontextprotocol/server-filesystem /tmp
  nerve node add mcp gh --url https://host/mcp --header 'Authorization: Bearer ${TOKEN}'
  nerve node add llm agent --base-url http://127.0.0.1:8080/v1 --model qwen3 --tools fs,sh
  nerve node add claude cc --session-tools -- claude
  nerve node add identity echo`,
		Complete:   "kind",
		Flags:      nodeAddFlags(),
		Run:        runNodeAdd,
		Specialize: specializeNodeAdd,
	}
}

// kindHelp is the usage and help of `node add KIND`.
var kindHelp = map[string][2]string{
	kindBash: {"node add bash NAME [--cwd DIR] [--env K=V] [--timeout D] [-- BASH ARGS...]", `A persistent bash shell: its folder, variables and functions survive
between calls.

Examples:
  nerve node add bash sh --cwd /srv
  nerve node add bash sh --env PATH='${HOME}/bin:${PATH}' --timeout 10m`},
	kindMCP: {"node add mcp NAME [--env K=V] [--cwd DIR] [--url URL] [--header 'K: V'] [--transport stdio|http|sse] [--timeout D] [--start-timeout D] [--ping D|off] [--restart on-failure] [-- COMMAND ARGS...]", `An MCP server: a command after -- (stdio), or --url (streamable HTTP,
or SSE). To add every server of a .mcp.json, see ` + "`nerve mcp import`" + `.

Examples:
  nerve node add mcp fs -- npx -y @modelcontextprotocol/server-filesystem /tmp
  nerve node add mcp gh --url https://host/mcp --header 'Authorization: Bearer ${TOKEN}'
  nerve node add mcp old --url https://host/sse --transport sse --timeout 2m`},
	kindLLM: {"node add llm NAME --base-url URL --model M [--api-key '${VAR}'] [--tools LIST] [--discover] [--system TEXT] [--max-steps N] [--header 'K: V'] [--temperature X] [--max-tokens N] [--stream=false] [--timeout D]", `A conversation with a model behind an OpenAI-compatible API (or Anthropic's
Messages API with --provider anthropic), which may call
the session's tools named by --tools. Give the API key as a reference,
in single quotes so your shell leaves it alone: it is saved unexpanded and
read from the daemon's environment when the node starts.

Examples:
  nerve node add llm local --base-url http://127.0.0.1:8080/v1 --model qwen3 --tools fs,sh
  nerve node add llm gpt --base-url https://api.openai.com/v1 --model gpt-4o-mini --api-key '${OPENAI_API_KEY}' --tools '*'
  nerve node add llm claude-api --provider anthropic --model claude-sonnet-4-5 --api-key '${ANTHROPIC_API_KEY}' --tools '*'
  nerve node add llm many --base-url http://127.0.0.1:8080/v1 --model qwen3 --tools '*' --discover`},
	kindClaude: {"node add claude NAME [--mcp-config F] [--strict-mcp-config] [--session-tools] [--fork-from NODE] [--permission-mode M] [--timeout D] [-- COMMAND ARGS...]", `Claude Code, kept running with its conversation (resumed after a restart).
The command defaults to ` + "`claude`" + `.

Examples:
  nerve node add claude cc --session-tools
  nerve node add claude cc2 --fork-from cc
  nerve node add claude review --mcp-config .mcp.json --strict-mcp-config -- npx @anthropic-ai/claude-code`},
}

// specializeNodeAdd returns `node add KIND`: that kind's flags and help.
func specializeNodeAdd(args []string) *Command {
	kind := args[0]
	c := nodeAddCmd()
	c.Specialize = nil
	c.Flags = slices.DeleteFunc(c.Flags, func(f *Flag) bool { return !flagForKind(f, kind) })
	if h, ok := kindHelp[kind]; ok {
		c.Usage, c.Help = h[0], h[1]
	} else {
		c.Usage = "node add " + kind + " NAME [--option K=V] [--options JSON]"
		c.Help = fmt.Sprintf("Nodes of kind %s take only generic options; see `nerve node kinds`.", kind)
	}
	c.Summary = "add a " + kind + " node and start it"
	return c
}

func flagForKind(f *Flag, kind string) bool { return f.Kinds == nil || slices.Contains(f.Kinds, kind) }

// checkKindFlags refuses a flag given for a kind it is not for.
func checkKindFlags(inv *Invocation, kind string) error {
	for _, f := range inv.Command.Flags {
		if inv.Has(f.Name) && !flagForKind(f, kind) {
			return usagef(inv, "--%s is a flag of %s nodes, not of %s nodes (see `nerve node add %s --help`)",
				f.Name, orList(f.Kinds), kind, kind)
		}
	}
	return nil
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

func runNodeAdd(ctx context.Context, env *Env, inv *Invocation) error {
	args := inv.Args[:len(inv.Args)-len(inv.Rest)]
	if len(args) != 2 {
		return usagef(inv, "`nerve node add` needs KIND and NAME (got %d arguments)", len(args))
	}
	kind, id := args[0], args[1]
	if err := node.ValidateID(id); err != nil {
		return usagef(inv, "%v", err)
	}
	if err := checkKindFlags(inv, kind); err != nil {
		return err
	}
	spec := node.Spec{Kind: kind, ID: id, Command: inv.Rest}
	var err error
	if spec.Cwd, err = absPath(inv.Flag("cwd")); err != nil {
		return usagef(inv, "--cwd: %v", err)
	}
	if spec.Cwd == "" && kind != kindLLM {
		// The daemon runs elsewhere: a node starts where the user is.
		if wd, err := os.Getwd(); err == nil {
			spec.Cwd = wd
		}
	}
	if spec.Env, err = keyValues(inv, "env"); err != nil {
		return err
	}
	opts := map[string]any{}
	if o := inv.Flag("options"); o != "" {
		if err := json.Unmarshal([]byte(o), &opts); err != nil {
			return usagef(inv, "--options must be a JSON object: %v", err)
		}
	}
	var kindOpts any
	switch kind {
	case kindMCP:
		var mo mcpconf.Options
		mo, err = mcpSpec(inv, &spec)
		kindOpts = mo
	case kindLLM:
		kindOpts, err = llmOptions(env, inv)
	case kindClaude:
		kindOpts, err = claudeOptions(ctx, env, inv)
	case kindBash:
		var t node.Duration
		t, err = timeoutFlag(inv)
		if t != 0 {
			opts["timeout"] = t
		}
	}
	if err != nil {
		return err
	}
	if kindOpts != nil {
		if err := mergeJSON(opts, kindOpts); err != nil {
			return err
		}
	}
	for _, kv := range inv.All("option") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usagef(inv, "--option %q: use KEY=VALUE", kv)
		}
		var val any
		if json.Unmarshal([]byte(v), &val) != nil {
			val = v
		}
		opts[k] = val
	}
	if len(opts) > 0 {
		b, err := json.Marshal(opts)
		if err != nil {
			return err
		}
		spec.Options = b
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	info, err := s.Add(ctx, spec)
	if err != nil {
		var ce *client.Error
		if env.JSON && errors.As(err, &ce) && ce.Node != nil {
			_ = printJSON(env, ce.Node)
		}
		return err
	}
	if env.JSON {
		return printJSON(env, info)
	}
	fmt.Fprintf(env.Stdout, "%s %s is %s with %d tool%s\n", info.Kind, info.ID, info.State, info.Tools, plural(info.Tools))
	return nil
}

// mergeJSON adds the fields v marshals to (its omitempty fields left out)
// to opts.
func mergeJSON(opts map[string]any, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding the node's options: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("encoding the node's options: %w", err)
	}
	maps.Copy(opts, m)
	return nil
}

// absPath makes a path the user typed absolute: the daemon does not run in
// the user's folder. ${VAR} and ~ are left for the node to expand.
func absPath(p string) (string, error) {
	if p == "" || filepath.IsAbs(p) || strings.Contains(p, "${") || strings.HasPrefix(p, "~") {
		return p, nil
	}
	return filepath.Abs(p)
}

// keyValues reads a repeatable KEY=VALUE flag.
func keyValues(inv *Invocation, flag string) (map[string]string, error) {
	var m map[string]string
	for _, kv := range inv.All(flag) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef(inv, "--%s %q: use KEY=VALUE", flag, kv)
		}
		if m == nil {
			m = map[string]string{}
		}
		m[k] = v
	}
	return m, nil
}

// headers reads --header 'KEY: VALUE' flags.
func headers(inv *Invocation) (map[string]string, error) {
	var m map[string]string
	for _, h := range inv.All("header") {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usagef(inv, "--header %q: use 'KEY: VALUE'", h)
		}
		if m == nil {
			m = map[string]string{}
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m, nil
}

func timeoutFlag(inv *Invocation) (node.Duration, error) {
	t := inv.Flag("timeout")
	if t == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil || d <= 0 {
		return 0, usagef(inv, "--timeout %q: use a positive duration such as 90s or 10m", t)
	}
	return node.Duration(d), nil
}

func intFlag(inv *Invocation, name string) (int, error) {
	v := inv.Flag(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, usagef(inv, "--%s %q: use a positive whole number", name, v)
	}
	return n, nil
}

// mcpSpec fills spec (command, cwd, env) and returns the options of an mcp
// node, built the way `nerve mcp import` builds them: mcpconf.Server.Spec.
func mcpSpec(inv *Invocation, spec *node.Spec) (mcpconf.Options, error) {
	var o mcpconf.Options
	hs, err := headers(inv)
	if err != nil {
		return o, err
	}
	timeout, err := timeoutFlag(inv)
	if err != nil {
		return o, err
	}
	srv := mcpconf.Server{
		Name: spec.ID, Transport: inv.Flag("transport"), Command: spec.Command, Cwd: spec.Cwd, Env: spec.Env,
		URL: inv.Flag("url"), Headers: hs, Timeout: time.Duration(timeout),
	}
	switch t := srv.Transport; {
	case t != "" && t != "stdio" && t != "http" && t != "sse":
		return o, usagef(inv, "--transport %q: use stdio, http or sse", t)
	case len(srv.Command) > 0 && srv.URL != "":
		return o, usagef(inv, "give the server either as a command after -- (stdio) or as --url (http, sse), not both")
	case len(srv.Command) == 0 && srv.URL == "":
		return o, usagef(inv, "an mcp node needs a server: a command after -- (e.g. `nerve node add mcp fs -- npx -y @modelcontextprotocol/server-filesystem /tmp`) or --url URL")
	case t == "stdio" && srv.URL != "":
		return o, usagef(inv, "--transport stdio runs a command given after --; for --url use --transport http or sse")
	case (t == "http" || t == "sse") && srv.URL == "":
		return o, usagef(inv, "--transport %s needs --url URL; a command after -- runs over stdio", t)
	case len(hs) > 0 && srv.URL == "":
		return o, usagef(inv, "--header is sent to a --url server; a command's server takes --env instead")
	}
	// ServerFromSpec fills in the transport the kind would infer, so the
	// saved spec says which one is used.
	srv, _, err = mcpconf.ServerFromSpec(srv.Spec(spec.ID))
	if err != nil {
		return o, usagef(inv, "%v", err)
	}
	*spec = srv.Spec(spec.ID)
	if err := spec.DecodeOptions(&o); err != nil {
		return o, err
	}
	for _, r := range inv.All("root") {
		abs, err := absPath(r)
		if err != nil {
			return o, usagef(inv, "--root %q: %v", r, err)
		}
		o.Roots = append(o.Roots, abs)
	}
	switch r := inv.Flag("restart"); r {
	case "", "on-failure":
		o.Restart = r
	default:
		return o, usagef(inv, "--restart %q: the one policy is on-failure (leave the flag out for none)", r)
	}
	o.InheritEnv = inv.Bool("inherit-env")
	if p := inv.Flag("ping"); p != "" {
		if p != "off" {
			if d, err := time.ParseDuration(p); err != nil || d <= 0 {
				return o, usagef(inv, "--ping %q: use a duration such as 30s, or off", p)
			}
		}
		o.Ping = p
	}
	if st := inv.Flag("start-timeout"); st != "" {
		d, err := time.ParseDuration(st)
		if err != nil || d <= 0 {
			return o, usagef(inv, "--start-timeout %q: use a positive duration such as 90s or 5m", st)
		}
		o.StartTimeout = node.Duration(d)
	}
	return o, nil
}

// anthropicBaseURL is the Messages API's root, the default of
// --provider anthropic.
const anthropicBaseURL = "https://api.anthropic.com"

// keyVar is the usual variable holding a provider's API key.
func keyVar(provider string) string {
	if provider == llm.ProviderAnthropic {
		return "ANTHROPIC_API_KEY"
	}
	return "OPENAI_API_KEY"
}

// llmOptions returns the options of an llm node.
func llmOptions(env *Env, inv *Invocation) (llm.Options, error) {
	o := llm.Options{
		BaseURL:  inv.Flag("base-url"),
		Model:    inv.Flag("model"),
		APIKey:   inv.Flag("api-key"),
		Tools:    llm.ParseTools(inv.Flag("tools")),
		Discover: inv.Bool("discover"),
		System:   inv.Flag("system"),
		Provider: inv.Flag("provider"),
	}
	if len(inv.Rest) > 0 {
		return o, usagef(inv, "an llm node runs no command (got %q): give --base-url and --model", strings.Join(inv.Rest, " "))
	}
	if o.BaseURL == "" && o.Provider == llm.ProviderAnthropic {
		o.BaseURL = anthropicBaseURL
	}
	if o.BaseURL == "" || o.Model == "" {
		return o, usagef(inv, "an llm node needs --base-url URL and --model M (e.g. --base-url http://127.0.0.1:8080/v1 --model qwen3)")
	}
	if o.APIKey != "" && !strings.Contains(o.APIKey, "${") {
		if !inv.Bool("allow-literal-key") {
			return o, usagef(inv, "--api-key is a literal key: it would be saved in clear text in the session's file; "+
				"pass a reference to a variable of the daemon's environment instead, in single quotes: --api-key '${%s}' "+
				"(or add --allow-literal-key to save it anyway)", keyVar(o.Provider))
		}
		fmt.Fprintln(env.Stderr, "nerve: warning: --api-key is a literal key and is saved in clear text in the session's file; prefer --api-key '${VAR}'")
	}
	var err error
	if o.Headers, err = headers(inv); err != nil {
		return o, err
	}
	if o.Timeout, err = timeoutFlag(inv); err != nil {
		return o, err
	}
	if o.MaxSteps, err = intFlag(inv, "max-steps"); err != nil {
		return o, err
	}
	if o.MaxTokens, err = intFlag(inv, "max-tokens"); err != nil {
		return o, err
	}
	if o.ContextTokens, err = intFlag(inv, "context-tokens"); err != nil {
		return o, err
	}
	if t := inv.Flag("temperature"); t != "" {
		x, err := strconv.ParseFloat(t, 64)
		if err != nil || x < 0 {
			return o, usagef(inv, "--temperature %q: use a number such as 0.2", t)
		}
		o.Temperature = &x
	}
	if inv.Has("stream") {
		b := inv.Bool("stream")
		o.Stream = &b
	}
	return o, nil
}

// claudeState is the part of a claude node's Spec.State --fork-from reads.
type claudeState struct {
	SessionID string `json:"session_id"`
	Started   bool   `json:"started"`
}

// claudeOptions returns the options of a claude node.
func claudeOptions(ctx context.Context, env *Env, inv *Invocation) (claude.Options, error) {
	o := claude.Options{
		MCPConfig:       inv.Flag("mcp-config"),
		StrictMCPConfig: inv.Bool("strict-mcp-config"),
		SessionTools:    inv.Bool("session-tools"),
		PermissionMode:  inv.Flag("permission-mode"),
		SessionID:       inv.Flag("session-id"),
	}
	var err error
	if o.Timeout, err = timeoutFlag(inv); err != nil {
		return o, err
	}
	if c := o.MCPConfig; c != "" && !strings.HasPrefix(strings.TrimSpace(c), "{") {
		if o.MCPConfig, err = absPath(c); err != nil {
			return o, usagef(inv, "--mcp-config: %v", err)
		}
		if !strings.Contains(c, "${") && !strings.HasPrefix(c, "~") {
			if _, err := os.Stat(o.MCPConfig); err != nil {
				return o, usagef(inv, "--mcp-config %s: %v (give an MCP config file, or inline JSON starting with '{')", c, err)
			}
		}
	}
	if o.PermissionMode != "" && !slices.Contains(claudePermissionModes, o.PermissionMode) {
		return o, usagef(inv, "--permission-mode %q: use one of %s", o.PermissionMode, strings.Join(claudePermissionModes, ", "))
	}
	if from := inv.Flag("fork-from"); from != "" {
		if o.ForkFromSession, err = forkSession(ctx, env, inv, from); err != nil {
			return o, err
		}
	}
	return o, nil
}

// forkSession returns the Claude session id of claude node from.
func forkSession(ctx context.Context, env *Env, inv *Invocation, from string) (string, error) {
	s, err := env.session(ctx)
	if err != nil {
		return "", err
	}
	d, err := s.Node(ctx, from)
	if err != nil {
		return "", fmt.Errorf("--fork-from %s: %w", from, err)
	}
	if d.Spec.Kind != kindClaude {
		return "", usagef(inv, "--fork-from %s: %s is %s %s node, not a claude node", from, from, article(d.Spec.Kind), d.Spec.Kind)
	}
	var st claudeState
	if len(d.Spec.State) > 0 {
		if err := json.Unmarshal(d.Spec.State, &st); err != nil {
			return "", fmt.Errorf("--fork-from %s: reading its saved state: %w", from, err)
		}
	}
	if st.SessionID == "" || !st.Started {
		return "", usagef(inv, "--fork-from %s: that node has no conversation yet; ask it something first (`nerve call @%s hello`)", from, from)
	}
	return st.SessionID, nil
}

// article returns "an" before a word that starts with a vowel, else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}
