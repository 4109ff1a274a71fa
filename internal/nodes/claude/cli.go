package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/nerve-dev/nerve/internal/kindcli"
)

// CLI is what `nerve node add claude` knows of the kind.
func CLI() *kindcli.Kind {
	return &kindcli.Kind{
		Kind:  Kind,
		Usage: "node add claude NAME [--mcp-config F] [--strict-mcp-config] [--session-tools] [--fork-from NODE] [--permission-mode M] [--timeout D] [-- COMMAND ARGS...]",
		Help: `Claude Code, kept running with its conversation (resumed after a restart).
The command defaults to ` + "`claude`" + `.

Examples:
  nerve node add claude cc --session-tools
  nerve node add claude cc2 --fork-from cc
  nerve node add claude review --mcp-config .mcp.json --strict-mcp-config -- npx @anthropic-ai/claude-code`,
		Flags: []*kindcli.Flag{
			kindcli.Cwd, kindcli.Env, kindcli.Timeout,
			{Name: "mcp-config", Value: "FILE", Usage: "MCP servers for Claude: a config file in any format nerve reads, or inline JSON"},
			{Name: "strict-mcp-config", Usage: "Claude uses only the servers nerve gives it, not the user's own"},
			{Name: "session-tools", Usage: "give Claude the session's tools (every other node's) through nerve's MCP endpoint"},
			{Name: "fork-from", Value: "NODE", Usage: "start from a copy of claude node NODE's conversation"},
			{Name: "permission-mode", Value: "MODE", Values: permissionModes, Usage: "Claude's --permission-mode (" + strings.Join(permissionModes, ", ") + ")"},
			{Name: "session-id", Value: "UUID", Usage: "Claude session id of the node's conversation (default: a fresh one)"},
		},
		Options: cliOptions,
	}
}

// cliOptions returns the options of a claude node.
func cliOptions(ctx context.Context, in *kindcli.Input) (any, error) {
	f := in.Flags
	o := Options{
		MCPConfig:       f.Flag("mcp-config"),
		StrictMCPConfig: f.Bool("strict-mcp-config"),
		SessionTools:    f.Bool("session-tools"),
		PermissionMode:  f.Flag("permission-mode"),
		SessionID:       f.Flag("session-id"),
	}
	var err error
	if o.Timeout, err = kindcli.TimeoutOf(f); err != nil {
		return o, err
	}
	if c := o.MCPConfig; c != "" && !strings.HasPrefix(strings.TrimSpace(c), "{") {
		if o.MCPConfig, err = kindcli.AbsPath(c); err != nil {
			return o, kindcli.Usagef("--mcp-config: %v", err)
		}
		if !strings.Contains(c, "${") && !strings.HasPrefix(c, "~") {
			if _, err := os.Stat(o.MCPConfig); err != nil {
				return o, kindcli.Usagef("--mcp-config %s: %v (give an MCP config file, or inline JSON starting with '{')", c, err)
			}
		}
	}
	if o.PermissionMode != "" && !slices.Contains(permissionModes, o.PermissionMode) {
		return o, kindcli.Usagef("--permission-mode %q: use one of %s", o.PermissionMode, strings.Join(permissionModes, ", "))
	}
	if from := f.Flag("fork-from"); from != "" {
		if o.ForkFromSession, err = forkSession(ctx, in, from); err != nil {
			return o, err
		}
	}
	return o, nil
}

// forkSession returns the Claude session id of claude node from.
func forkSession(ctx context.Context, in *kindcli.Input, from string) (string, error) {
	spec, err := in.Node(ctx, from)
	if err != nil {
		return "", fmt.Errorf("--fork-from %s: %w", from, err)
	}
	if spec.Kind != Kind {
		return "", kindcli.Usagef("--fork-from %s: %s is %s %s node, not a claude node", from, from, article(spec.Kind), spec.Kind)
	}
	var st persisted
	if len(spec.State) > 0 {
		if err := json.Unmarshal(spec.State, &st); err != nil {
			return "", fmt.Errorf("--fork-from %s: reading its saved state: %w", from, err)
		}
	}
	if st.SessionID == "" || !st.Started {
		return "", kindcli.Usagef("--fork-from %s: that node has no conversation yet; ask it something first (`nerve call @%s hello`)", from, from)
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
