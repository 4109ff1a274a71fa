package mcpconf

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/nerve-dev/nerve/pkg/node"
)

// UnsetError reports a ${NAME} reference to a variable that is not set and
// has no default. nerve never passes such a reference on literally.
type UnsetError struct {
	// Name is the variable's name, or the secret's for ${keychain:NAME}.
	Name string
	// Ref is the reference as written between the braces, without a
	// default: "GITHUB_TOKEN", or "env:GITHUB_TOKEN" in VS Code's form.
	Ref string
	// Where, if set, names the environments that were read (a node's
	// node.Vars.Where); the message then says how to set it for nerve.
	Where string
}

func (e *UnsetError) Error() string {
	if e.Secret() {
		return fmt.Sprintf("secret %s is not in nerve's secret store (${%s}); set it with `nerve secret set %s` (it reads the value from the terminal or stdin), then restart the node", e.Name, e.Ref, e.Name)
	}
	if e.Where != "" {
		return fmt.Sprintf("${%s} is not set in %s; set it with `nerve env set %s=…` (or write ${%s:-default})", e.Ref, e.Where, e.Name, e.Ref)
	}
	return fmt.Sprintf("variable ${%s} is not set (set it, or write ${%s:-default})", e.Ref, e.Ref)
}

// Secret reports whether the reference is to a secret (${keychain:NAME}).
func (e *UnsetError) Secret() bool { return strings.HasPrefix(e.Ref, KeychainPrefix) }

// KeychainPrefix starts a reference to one of nerve's secrets,
// ${keychain:NAME} (issue 32, item 5): Expand asks lookup for the key
// "keychain:NAME" (node.SecretPrefix), which no environment variable can
// be named, and the session answers it from the secret store (`nerve
// secret set NAME`).
const KeychainPrefix = node.SecretPrefix

// Explain fills in Where of an *UnsetError in err and returns err.
//
// The messages of errors that wrap it were made before, so the returned
// error's message is err's with the UnsetError's part rewritten; it still
// wraps err.
func Explain(err error, where string) error {
	var ue *UnsetError
	if !errors.As(err, &ue) || ue.Where != "" || where == "" {
		return err
	}
	before := ue.Error()
	ue.Where = where
	return &explained{msg: strings.Replace(err.Error(), before, ue.Error(), 1), err: err}
}

type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }

// MaxExpandDepth bounds how deeply ${NAME:-default} defaults may nest
// (${A:-${B:-x}} nests 2 deep). Expansion recurses once per level, and a
// saved spec nesting millions deep overflowed the daemon's stack on every
// start (issue 21).
const MaxExpandDepth = 32

// refError is a reference nerve cannot expand: bad syntax, or a VS Code
// ${input:...} / ${command:...} form that needs an editor.
type refError struct {
	msg string
	// vscode is set for a well-formed ${prefix:...} reference other than
	// ${env:...}; Parse reports those as warnings, Expand as errors.
	vscode bool
}

func (e *refError) Error() string { return e.msg }

// Expand replaces ${NAME} with the value lookup returns for NAME, and
// ${NAME:-default} with the default when NAME is unset or empty (as in the
// shell). The default may itself contain references. VS Code's ${env:NAME}
// is the same as ${NAME}; ${keychain:NAME} is one of nerve's secrets,
// looked up as "keychain:NAME". $${ is a literal ${; any other $ is kept
// as is.
// Values are inserted verbatim: a value containing ${ is not expanded again.
//
// An unset variable without a default is an *UnsetError.
func Expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	out, _, err := expandText(s, 0, 0, false, true, lookup)
	return out, err
}

// expandText expands s from byte i. Inside a default (inner) it stops at the
// '}' that closes the default and returns the index after it. When eval is
// false it only checks the syntax (a default that is not used).
func expandText(s string, i, depth int, inner, eval bool, lookup func(string) (string, bool)) (string, int, error) {
	var b strings.Builder
	for i < len(s) {
		c := s[i]
		switch {
		case inner && c == '}':
			return b.String(), i + 1, nil
		case c != '$':
			b.WriteByte(c)
			i++
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			v, next, err := expandRef(s, i, depth, eval, lookup)
			if err != nil {
				return "", 0, err
			}
			b.WriteString(v)
			i = next
		default:
			b.WriteByte('$')
			i++
		}
	}
	if inner {
		return "", 0, errUnterminated(s, 0)
	}
	return b.String(), i, nil
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
			return false
		}
	}
	return s != ""
}

func scanName(s string, j int) int {
	for j < len(s) && isNameByte(s[j]) {
		j++
	}
	return j
}

func errUnterminated(s string, i int) error {
	return &refError{msg: fmt.Sprintf("unterminated variable reference in %q: close it with } (or write $${ for a literal ${)", clip(s[i:]))}
}

// clip shortens what a message quotes of a value: a value may be megabytes.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// expandRef expands the reference that starts with "${" at s[i].
func expandRef(s string, i, depth int, eval bool, lookup func(string) (string, bool)) (string, int, error) {
	j := i + 2
	k := scanName(s, j)
	key := ""
	if k < len(s) && s[k] == ':' && !strings.HasPrefix(s[k:], ":-") && isLetters(s[j:k]) {
		prefix := s[j:k]
		if prefix == "keychain" {
			key = KeychainPrefix
		} else if prefix != "env" {
			end := strings.IndexByte(s[k:], '}')
			if end < 0 {
				return "", 0, errUnterminated(s, i)
			}
			ref := s[i : k+end+1]
			if prefix == "input" {
				return "", 0, &refError{vscode: true, msg: fmt.Sprintf("%s is a VS Code input, which nerve cannot prompt for: set an environment variable and write ${NAME} instead", ref)}
			}
			return "", 0, &refError{vscode: true, msg: fmt.Sprintf("%s is a VS Code variable nerve does not support: set an environment variable and write ${NAME} instead", ref)}
		}
		j = k + 1
		k = scanName(s, j)
	}
	name, ref := s[j:k], s[i+2:k]
	if k >= len(s) {
		return "", 0, errUnterminated(s, i)
	}
	if name == "" || name[0] >= '0' && name[0] <= '9' || s[k] != '}' && !strings.HasPrefix(s[k:], ":-") {
		shown := s[i:]
		if end := strings.IndexByte(s[i:], '}'); end >= 0 {
			shown = s[i : i+end+1]
		}
		shown = clip(shown)
		return "", 0, &refError{msg: fmt.Sprintf("invalid variable reference %s: write ${NAME} or ${NAME:-default}, NAME made of letters, digits and _ (or write $${ for a literal ${)", shown)}
	}
	var val string
	var set bool
	if eval {
		val, set = lookup(key + name)
	}
	if s[k] == '}' {
		if eval && !set {
			return "", 0, &UnsetError{Name: name, Ref: ref}
		}
		return val, k + 1, nil
	}
	useDefault := !set || val == ""
	if depth >= MaxExpandDepth {
		return "", 0, &refError{msg: fmt.Sprintf("${%s:-...} nests defaults more than %d deep (the limit): write the value without nesting ${NAME:-${NAME:-...}} so deeply", ref, MaxExpandDepth)}
	}
	def, next, err := expandText(s, k+2, depth+1, true, eval && useDefault, lookup)
	if err != nil {
		var re *refError
		if errors.As(err, &re) && strings.HasPrefix(re.msg, "unterminated") {
			return "", 0, errUnterminated(s, i)
		}
		return "", 0, err
	}
	if useDefault {
		return def, next, nil
	}
	return val, next, nil
}

// checkRefs reports the syntax errors of the references in s without
// looking anything up.
func checkRefs(s string) error {
	if !strings.Contains(s, "${") {
		return nil
	}
	_, err := Expand(s, func(string) (string, bool) { return "x", true })
	return err
}

// Expand returns s with every ${VAR} in its command, arguments, env values,
// cwd, url and header values expanded by lookup (os.LookupEnv, usually).
// file names the config in error messages; it may be empty.
func (s Server) Expand(lookup func(string) (string, bool), file string) (Server, error) {
	fail := func(field string, err error) error {
		prefix := fmt.Sprintf("server %q: ", s.Name)
		if file != "" {
			prefix = file + ": " + prefix
		}
		var ue *UnsetError
		if errors.As(err, &ue) {
			return fmt.Errorf("%s%w", prefix, err)
		}
		return fmt.Errorf("%s%s: %w", prefix, field, err)
	}
	if err := s.checkSecretPlaces(); err != nil {
		return Server{}, fail(err.field, err)
	}
	out := s.clone()
	var err error
	for i, a := range s.Command {
		field := `"command"`
		if i > 0 {
			field = fmt.Sprintf(`"args[%d]"`, i-1)
		}
		if out.Command[i], err = Expand(a, lookup); err != nil {
			return Server{}, fail(field, err)
		}
	}
	if out.Cwd, err = Expand(s.Cwd, lookup); err != nil {
		return Server{}, fail(`"cwd"`, err)
	}
	for _, k := range sortedKeys(s.Env) {
		if out.Env[k], err = Expand(s.Env[k], lookup); err != nil {
			return Server{}, fail(fmt.Sprintf("%q", "env."+k), err)
		}
	}
	if out.URL, err = Expand(s.URL, lookup); err != nil {
		return Server{}, fail(`"url"`, err)
	}
	for _, k := range sortedKeys(s.Headers) {
		if out.Headers[k], err = Expand(s.Headers[k], lookup); err != nil {
			return Server{}, fail(fmt.Sprintf("%q", "headers."+k), err)
		}
	}
	if out.Transport != "stdio" && out.URL != "" {
		u, err := url.Parse(out.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Server{}, fail(`"url"`, fmt.Errorf("%q is not an http:// or https:// URL", out.URL))
		}
	}
	return out, nil
}

func (s Server) clone() Server {
	c := s
	c.Command = slices.Clone(s.Command)
	c.Env = cloneMap(s.Env)
	c.Headers = cloneMap(s.Headers)
	if s.Source != nil {
		src := *s.Source
		c.Source = &src
	}
	return c
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// secretPlaceError is a ${keychain:NAME} where a secret would be seen.
type secretPlaceError struct {
	field, ref, fix string
}

func (e *secretPlaceError) Error() string {
	return fmt.Sprintf("%s cannot be used here: %s", e.ref, e.fix)
}

// checkSecretPlaces refuses a secret (${keychain:NAME}) in the command,
// its arguments, the cwd or the URL: a process's command line is visible
// to every user of the machine (ps, /proc/PID/cmdline), and a URL is
// written to logs and messages. Secrets go in env, headers and oauth.
func (s Server) checkSecretPlaces() *secretPlaceError {
	const argFix = `a command line is visible to every user of the machine (ps, /proc/PID/cmdline); pass it in "env" and have the server read it from there`
	for i, a := range s.Command {
		field := `"command"`
		if i > 0 {
			field = fmt.Sprintf(`"args[%d]"`, i-1)
		}
		if ref := secretRef(a); ref != "" {
			return &secretPlaceError{field, ref, argFix}
		}
	}
	if ref := secretRef(s.Cwd); ref != "" {
		return &secretPlaceError{`"cwd"`, ref, "a folder is no secret"}
	}
	if ref := secretRef(s.URL); ref != "" {
		return &secretPlaceError{`"url"`, ref, `a URL is written to logs and messages; pass it in a header ("headers": {"Authorization": "Bearer ${keychain:NAME}"})`}
	}
	return nil
}

// secretRef returns the first ${keychain:NAME} that s refers to, its
// defaults included, or "".
func secretRef(s string) string {
	if !strings.Contains(s, KeychainPrefix) {
		return ""
	}
	ref := ""
	// Every variable set and empty: each default is expanded too.
	_, _ = Expand(s, func(k string) (string, bool) {
		if ref == "" && strings.HasPrefix(k, KeychainPrefix) {
			ref = "${" + k + "}"
		}
		return "", true
	})
	return ref
}
