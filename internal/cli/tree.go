package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/nerve-dev/nerve/internal/suggest"
)

// Command is one node of the command tree: a group (with Sub) or a command
// (with Run). The tree is data so that the command line, the REPL's
// `:`-commands and shell completion all read the same thing.
type Command struct {
	Name    string
	Aliases []string
	// Summary is one line for lists of commands.
	Summary string
	// Usage is the synopsis after "nerve ", e.g. "node rm NAME".
	Usage string
	// Help is the longer text shown by --help: details and examples.
	Help  string
	Flags []*Flag
	Sub   []*Command
	// Run runs the command. Nil for a group.
	Run func(ctx context.Context, env *Env, inv *Invocation) error
	// RawArgs stops flag parsing at the first argument: everything after
	// it is the command's, verbatim (`nerve call @bash ls -la`).
	RawArgs bool
	// Complete names what the command's arguments are, for completion:
	// "node", "kind", "session", "shell" or "".
	Complete string
	// Hidden commands are left out of help and completion.
	Hidden bool
	// Local commands never need the daemon (help, version, completion).
	Local bool
	// Specialize, if set, returns the command as it applies to its first
	// arguments — `node add llm` has the llm kind's flags and help — for
	// --help and completion. It returns nil when args say nothing more.
	Specialize func(args []string) *Command
}

// Flag is a command-line flag. A flag with no Value is a boolean.
type Flag struct {
	Name  string // long name, without "--"
	Short string // one letter, without "-"; may be empty
	Value string // the value's placeholder ("NAME"); empty for a boolean
	Usage string
	// Repeat lets the flag be given more than once (--env A=1 --env B=2).
	Repeat bool
	// Values are what the value may be, for completion; nil: anything.
	Values []string
	// Kinds are the node kinds the flag is for (`node add`); nil: every kind.
	Kinds []string
}

// Invocation is a parsed command line.
type Invocation struct {
	// Path is the command's names from the root, e.g. ["node", "add"].
	Path    []string
	Command *Command
	// Args are the positional arguments (and, after "--", Rest).
	Args []string
	// Rest are the arguments after "--"; Dash says whether "--" was given.
	Rest  []string
	Dash  bool
	flags map[string][]string
}

// Flag returns the last value of a flag, or "".
func (in *Invocation) Flag(name string) string {
	v := in.flags[name]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// All returns every value of a repeatable flag.
func (in *Invocation) All(name string) []string { return in.flags[name] }

// Bool reports whether a boolean flag is on: given, and not as --flag=false.
func (in *Invocation) Bool(name string) bool { return in.Flag(name) == "true" }

// Has reports whether a flag was given.
func (in *Invocation) Has(name string) bool { return len(in.flags[name]) > 0 }

// UsageError is a command line that could not be understood (exit 2).
type UsageError struct {
	Msg string
	// Cmd is the command whose usage to show.
	Cmd  *Command
	Path []string
}

func (e *UsageError) Error() string { return e.Msg }

// usagef returns a *UsageError for inv's command.
func usagef(inv *Invocation, format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...), Cmd: inv.Command, Path: inv.Path}
}

// globalFlags apply to every command.
var globalFlags = []*Flag{
	{Name: "session", Short: "s", Value: "NAME", Usage: "use session NAME (default: $NERVE_SESSION or \"default\")"},
	{Name: "embedded", Usage: "run an in-process session instead of using the daemon (nothing is saved)"},
	{Name: "host", Short: "H", Value: "ssh://[USER@]HOST[:PORT]", Usage: "use the daemon of another machine, through ssh (default: $NERVE_HOST, else the current context)"},
	{Name: "json", Usage: "print the answer as JSON"},
	{Name: "help", Short: "h", Usage: "show help for the command"},
}

// Lookup returns the subcommand called name (or one of its aliases).
func (c *Command) Lookup(name string) *Command {
	for _, s := range c.Sub {
		if s.Name == name || slices.Contains(s.Aliases, name) {
			return s
		}
	}
	return nil
}

// AllFlags returns the command's flags followed by the global ones.
func (c *Command) AllFlags() []*Flag {
	return append(slices.Clone(c.Flags), globalFlags...)
}

func findFlag(flags []*Flag, name string, short bool) *Flag {
	for _, f := range flags {
		if (!short && f.Name == name) || (short && f.Short != "" && f.Short == name) {
			return f
		}
	}
	return nil
}

// Parse walks argv down the tree from root and parses flags. Flags may come
// before or after the subcommand's name; "--" ends them.
func Parse(root *Command, argv []string) (*Invocation, error) {
	inv := &Invocation{Command: root, flags: map[string][]string{}}
	raw := false
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		cmd := inv.Command
		switch {
		case raw:
			inv.Args = append(inv.Args, a)
		case a == "--":
			inv.Dash = true
			inv.Rest = append(inv.Rest, argv[i+1:]...)
			inv.Args = append(inv.Args, argv[i+1:]...)
			i = len(argv)
		case strings.HasPrefix(a, "-") && a != "-":
			var name, value string
			hasValue, short := false, false
			if strings.HasPrefix(a, "--") {
				name, value, hasValue = strings.Cut(a[2:], "=")
			} else {
				name, short = a[1:], true
				if len(name) > 1 { // -sNAME
					name, value, hasValue = name[:1], name[1:], true
				}
			}
			f := findFlag(cmd.AllFlags(), name, short)
			if f == nil {
				return inv, &UsageError{Msg: fmt.Sprintf("unknown flag %s for `nerve %s`", a, strings.Join(inv.Path, " ")), Cmd: cmd, Path: inv.Path}
			}
			if f.Value == "" {
				on := true
				if hasValue {
					// --stream=false turns off a switch that is on by default.
					b, err := strconv.ParseBool(value)
					if err != nil {
						return inv, &UsageError{Msg: fmt.Sprintf("flag --%s takes no value other than =true or =false", f.Name), Cmd: cmd, Path: inv.Path}
					}
					on = b
				}
				inv.flags[f.Name] = append(inv.flags[f.Name], strconv.FormatBool(on))
				continue
			}
			if !hasValue {
				if i+1 >= len(argv) {
					return inv, &UsageError{Msg: fmt.Sprintf("flag --%s needs a value (%s)", f.Name, f.Value), Cmd: cmd, Path: inv.Path}
				}
				i++
				value = argv[i]
			}
			if !f.Repeat && len(inv.flags[f.Name]) > 0 && f.Name != "session" {
				return inv, &UsageError{Msg: fmt.Sprintf("flag --%s given twice", f.Name), Cmd: cmd, Path: inv.Path}
			}
			inv.flags[f.Name] = append(inv.flags[f.Name], value)
		case len(cmd.Sub) > 0 && len(inv.Args) == 0:
			sub := cmd.Lookup(a)
			if sub == nil {
				if cmd.Run != nil && cmd != root {
					inv.Args = append(inv.Args, a)
					continue
				}
				return inv, &UsageError{Msg: unknownCommand(cmd, inv.Path, a), Cmd: cmd, Path: inv.Path}
			}
			inv.Command = sub
			inv.Path = append(inv.Path, sub.Name)
		default:
			inv.Args = append(inv.Args, a)
			if cmd.RawArgs {
				raw = true
			}
		}
	}
	return inv, nil
}

func unknownCommand(cmd *Command, path []string, name string) string {
	var names []string
	for _, s := range cmd.Sub {
		if !s.Hidden {
			names = append(names, s.Name)
		}
	}
	where := "nerve"
	msg := fmt.Sprintf("unknown command %q", name)
	if len(path) > 0 {
		where = "nerve " + strings.Join(path, " ")
		msg += " for `" + where + "`"
	}
	if m := suggest.Closest(name, names); m != "" {
		msg += fmt.Sprintf(" — did you mean %q?", m)
	}
	return msg + fmt.Sprintf(" (commands: %s; see `%s --help`)", strings.Join(names, ", "), where)
}

// Exec runs one command line (without the program name) through the tree
// with env's writers and client. The REPL runs its `:`-commands with it.
func Exec(ctx context.Context, env *Env, argv []string) error {
	root := Tree()
	inv, err := Parse(root, argv)
	if err != nil {
		return err
	}
	cmd := inv.Command
	if inv.Bool("help") {
		return writeHelp(env.Stdout, specialize(cmd, inv.Args), inv.Path)
	}
	e := env.apply(inv)
	if cmd.Run == nil {
		if len(inv.Args) > 0 {
			return &UsageError{Msg: unknownCommand(cmd, inv.Path, inv.Args[0]), Cmd: cmd, Path: inv.Path}
		}
		return &UsageError{Msg: fmt.Sprintf("`nerve %s` needs a subcommand", strings.Join(inv.Path, " ")), Cmd: cmd, Path: inv.Path}
	}
	return cmd.Run(ctx, e, inv)
}

// specialize returns cmd as it applies to args (see Command.Specialize).
func specialize(cmd *Command, args []string) *Command {
	if cmd.Specialize == nil || len(args) == 0 {
		return cmd
	}
	if c := cmd.Specialize(args); c != nil {
		return c
	}
	return cmd
}

// writeHelp prints a command's help.
func writeHelp(w io.Writer, cmd *Command, path []string) error {
	var b strings.Builder
	usage := cmd.Usage
	if usage == "" {
		usage = strings.TrimSpace(strings.Join(path, " ") + " COMMAND")
	}
	if cmd.Summary != "" {
		fmt.Fprintf(&b, "%s\n\n", cmd.Summary)
	}
	fmt.Fprintf(&b, "Usage:\n  nerve %s\n", usage)
	if cmd.Help != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(cmd.Help, "\n"))
	}
	if len(cmd.Sub) > 0 {
		b.WriteString("\nCommands:\n")
		for _, s := range cmd.Sub {
			if !s.Hidden {
				fmt.Fprintf(&b, "  %-12s %s\n", s.Name, s.Summary)
			}
		}
	}
	if len(cmd.Flags) > 0 {
		b.WriteString("\nFlags:\n")
		writeFlags(&b, cmd.Flags)
	}
	b.WriteString("\nGlobal flags:\n")
	writeFlags(&b, globalFlags)
	if len(cmd.Sub) > 0 {
		where := strings.TrimSpace("nerve " + strings.Join(path, " "))
		fmt.Fprintf(&b, "\nRun `%s COMMAND --help` for a command's help.\n", where)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeFlags(b *strings.Builder, flags []*Flag) {
	for _, f := range flags {
		name := "--" + f.Name
		if f.Short != "" {
			name = "-" + f.Short + ", " + name
		}
		if f.Value != "" {
			name += " " + f.Value
		}
		fmt.Fprintf(b, "  %-24s %s\n", name, f.Usage)
	}
}

// errors used by ExitCode.
var errToolFailed = errors.New("the tool reported an error")
