// Package kindcli is what the command line knows of a node kind: the flags
// of `nerve node add KIND`, its usage and help, how the parsed flags become
// the kind's spec, and, for a kind whose nodes sign in to their server,
// what `nerve node auth` does. Each kind describes itself beside its
// factory (its CLI function) and internal/nodes/all lists them, so the
// command line imports no kind. The flags several kinds share (Cwd, Env,
// Timeout, Header) are defined here once.
package kindcli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/nerve-dev/nerve/pkg/node"
)

// Kind is what `nerve node add KIND` (and `nerve node auth`) needs of one
// kind.
type Kind struct {
	// Kind is the kind's name.
	Kind string
	// Usage is the synopsis after "nerve ", e.g. "node add bash NAME …".
	Usage string
	// Help is the longer text of `nerve node add KIND --help`.
	Help string
	// Flags are the kind's flags, shared ones included; their order is
	// the order of help.
	Flags []*Flag
	// NoFolder: nodes of the kind run no process, so they get no working
	// folder unless --cwd gives one.
	NoFolder bool
	// Options returns the kind's options (a value that marshals to the
	// spec's options, its empty fields left out) from the command line.
	Options func(ctx context.Context, in *Input) (any, error)
	// SignIn is set for a kind whose nodes sign in to their server.
	SignIn *SignIn
}

// Flag is a flag of `nerve node add`. A flag with no Value is a boolean.
type Flag struct {
	Name  string // long name, without "--"
	Value string // the value's placeholder ("DIR"); empty for a boolean
	Usage string
	// Repeat lets the flag be given more than once.
	Repeat bool
	// Values are what the value may be, for completion; nil: anything.
	Values []string
}

// Flags are the flags of one command line.
type Flags interface {
	// Flag returns the last value of a flag, or "".
	Flag(name string) string
	// All returns every value of a repeatable flag.
	All(name string) []string
	// Bool reports whether a boolean flag is on.
	Bool(name string) bool
	// Has reports whether a flag was given.
	Has(name string) bool
}

// Input is what a kind's Options reads.
type Input struct {
	Flags Flags
	// Spec is the node's spec as the command line gave it: kind, id, the
	// command after "--", cwd and env. Options may change it (the mcp
	// kind writes its transport and command there).
	Spec *node.Spec
	// Stderr takes warnings for the person.
	Stderr io.Writer
	// Node returns the spec of another node of the session.
	Node func(ctx context.Context, id string) (node.Spec, error)
}

// SignIn is what `nerve node auth` does for a kind whose nodes sign in
// to their server (OAuth).
type SignIn struct {
	// Target returns where a node of spec signs in (its server's URL,
	// ${VAR} expanded with lookup), or why it does not (a *UsageError).
	Target func(spec node.Spec, lookup func(string) (string, bool)) (string, error)
	// Logout forgets the sign-in to target kept in tokens.
	Logout func(tokens Tokens, target string) error
	// Run starts a node of spec with the sign-ins of tokens — authorize
	// sends the person to a sign-in page when none of them works — and
	// stops it again.
	Run func(ctx context.Context, spec node.Spec, tokens Tokens, authorize Authorize) error
}

// Tokens keeps sign-ins outside the session (internal/tokenstore).
type Tokens interface {
	Get(key string) ([]byte, error)
	Set(key string, secret []byte) error
	Delete(key string) error
}

// Authorize sends the person to authURL and returns what the
// authorization server sent back.
type Authorize func(ctx context.Context, authURL string) (*auth.AuthorizationResult, error)

// UsageError is a command line a kind could not understand: the command
// line shows it with the command's usage and exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// The flags several kinds share.
var (
	Cwd     = &Flag{Name: "cwd", Value: "DIR", Usage: "working folder of the node's process (default: the current folder)"}
	Env     = &Flag{Name: "env", Value: "KEY=VALUE", Usage: "environment variable for the node's process; VALUE may hold ${VAR}", Repeat: true}
	Timeout = &Flag{Name: "timeout", Value: "DURATION", Usage: "bound on one call (llm: on one request to the model), e.g. 90s or 10m"}
	Header  = &Flag{Name: "header", Value: "'KEY: VALUE'", Usage: "HTTP header sent to the server; VALUE may hold ${VAR}", Repeat: true}
)

// TimeoutOf reads --timeout: 0 when it is not given.
func TimeoutOf(f Flags) (node.Duration, error) {
	return DurationOf(f, "timeout", "90s or 10m")
}

// DurationOf reads a positive duration flag: 0 when it is not given.
func DurationOf(f Flags, name, example string) (node.Duration, error) {
	t := f.Flag(name)
	if t == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil || d <= 0 {
		return 0, Usagef("--%s %q: use a positive duration such as %s", name, t, example)
	}
	return node.Duration(d), nil
}

// HeadersOf reads --header 'KEY: VALUE' flags.
func HeadersOf(f Flags) (map[string]string, error) {
	var m map[string]string
	for _, h := range f.All("header") {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, Usagef("--header %q: use 'KEY: VALUE'", h)
		}
		if m == nil {
			m = map[string]string{}
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m, nil
}

// IntOf reads a positive whole-number flag: 0 when it is not given.
func IntOf(f Flags, name string) (int, error) {
	v := f.Flag(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, Usagef("--%s %q: use a positive whole number", name, v)
	}
	return n, nil
}

// AbsPath makes a path the person typed absolute: the daemon does not run
// in their folder. ${VAR} and ~ are left for the node to expand.
func AbsPath(p string) (string, error) {
	if p == "" || filepath.IsAbs(p) || strings.Contains(p, "${") || strings.HasPrefix(p, "~") {
		return p, nil
	}
	return filepath.Abs(p)
}
