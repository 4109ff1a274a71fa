package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/nerve-dev/nerve/internal/kindcli"
	"github.com/nerve-dev/nerve/internal/nodes/all"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

// nodeAddFlags are the flags of `node add`: every kind's (internal/nodes/all
// lists them), each for the kinds that have it, then the generic ones.
func nodeAddFlags() []*Flag {
	var flags []*Flag
	byName := map[string]*Flag{}
	for _, k := range all.CLI() {
		for _, kf := range k.Flags {
			f := byName[kf.Name]
			if f == nil {
				f = &Flag{Name: kf.Name, Value: kf.Value, Usage: kf.Usage, Repeat: kf.Repeat, Values: kf.Values}
				byName[kf.Name] = f
				flags = append(flags, f)
			}
			f.Kinds = append(f.Kinds, k.Kind)
		}
	}
	for _, f := range flags {
		slices.Sort(f.Kinds)
	}
	return append(flags,
		&Flag{Name: "option", Value: "KEY=VALUE", Usage: "kind-specific option (VALUE read as JSON when it parses)", Repeat: true},
		&Flag{Name: "options", Value: "JSON", Usage: "kind-specific options as a JSON object"},
	)
}

// kindCLI returns what the command line knows of kind, or nil for a kind
// that takes only generic options.
func kindCLI(kind string) *kindcli.Kind {
	for _, k := range all.CLI() {
		if k.Kind == kind {
			return k
		}
	}
	return nil
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

// specializeNodeAdd returns `node add KIND`: that kind's flags and help.
func specializeNodeAdd(args []string) *Command {
	kind := args[0]
	c := nodeAddCmd()
	c.Specialize = nil
	c.Flags = slices.DeleteFunc(c.Flags, func(f *Flag) bool { return !flagForKind(f, kind) })
	if k := kindCLI(kind); k != nil {
		c.Usage, c.Help = k.Usage, k.Help
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
	if spec.Cwd, err = kindcli.AbsPath(inv.Flag("cwd")); err != nil {
		return usagef(inv, "--cwd: %v", err)
	}
	k := kindCLI(kind)
	r, err := env.remote()
	if err != nil {
		return err
	}
	if r != nil && inv.Flag("cwd") != "" && spec.Cwd != inv.Flag("cwd") {
		return usagef(inv, "--cwd %q: give the folder on %s as an absolute path", inv.Flag("cwd"), r.Host)
	}
	// This machine's folder means nothing to a daemon on another one: its
	// nodes start where that daemon runs them.
	if spec.Cwd == "" && r == nil && (k == nil || !k.NoFolder) {
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
	if k != nil && k.Options != nil {
		in := &kindcli.Input{Flags: inv, Spec: &spec, Stderr: env.Stderr, Node: func(ctx context.Context, id string) (node.Spec, error) {
			s, err := env.session(ctx)
			if err != nil {
				return node.Spec{}, err
			}
			d, err := s.Node(ctx, id)
			return d.Spec, err
		}}
		kindOpts, err := k.Options(ctx, in)
		if err != nil {
			return kindError(inv, err)
		}
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

// kindError is a kind's error as the command line reports it: a
// kindcli.UsageError becomes the command's usage error (exit 2).
func kindError(inv *Invocation, err error) error {
	var ue *kindcli.UsageError
	if errors.As(err, &ue) {
		return usagef(inv, "%s", ue.Msg)
	}
	return err
}
