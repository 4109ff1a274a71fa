package mcpconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nerve-dev/nerve/internal/suggest"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Server is one MCP server of a config file, as written: ${VAR} references
// are not expanded (see Server.Expand).
type Server struct {
	// Name is the server's key in the file (or its "name" in the array form).
	Name string
	// Transport is "stdio", "http" (streamable HTTP) or "sse".
	Transport string
	// Command is the program and its arguments ("command" followed by
	// "args"); stdio servers only.
	Command []string
	Cwd     string
	// Env is added to the child's environment (see ChildEnv).
	Env map[string]string
	// URL and Headers are for http and sse servers.
	URL     string
	Headers map[string]string
	// InheritEnv passes nerve's whole environment to the child instead of
	// the safe list.
	InheritEnv bool
	// Timeout bounds each call to the server; zero means the node's default.
	Timeout time.Duration
	// StartTimeout bounds the server's start; zero means the node's default.
	StartTimeout time.Duration
	// Disabled: the file turns the server off ("disabled": true or
	// "enabled": false). An importer adds it stopped; a client that runs
	// servers (a claude node) leaves it out.
	Disabled bool
}

// Config is a parsed config file.
type Config struct {
	Path string
	// Servers are the servers in file order, disabled ones included
	// (Server.Disabled, with a warning); a disabled server that is not
	// usable is left out with a warning rather than an error.
	Servers []Server
	// Warnings are things nerve ignored (unknown keys, disabled servers,
	// VS Code inputs), each starting with "file:line:col: ".
	Warnings []string
}

// Load reads and parses the config file at path.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading MCP config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading MCP config: %w", err)
	}
	if len(data) > MaxConfigSize {
		return nil, fmt.Errorf("%s: the file is over %d bytes (64 MiB, the limit for an MCP config): is it the right file?", path, MaxConfigSize)
	}
	return Parse(path, data)
}

// MaxConfigSize bounds a config file nerve reads. Claude Code's
// ~/.claude.json, which keeps history beside its servers, can reach tens
// of megabytes; nothing legitimate comes near this (issue 21).
const MaxConfigSize = 64 << 20

// Parse parses a config in any of the accepted formats (see docs/mcp.md).
// path names the file in messages. Servers come back unexpanded. JSON
// comments and trailing commas, which VS Code allows, are accepted.
//
// Every error names the file, line and column; all servers are checked and
// their errors joined, so one run shows every mistake. When only some
// servers are wrong the error is a *ServerErrors and the Config holds the
// others.
func Parse(path string, data []byte) (*Config, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a BOM from Windows editors
	f := &file{path: path, data: stripJSONC(data), orig: data}
	if len(bytes.TrimSpace(f.data)) == 0 {
		return nil, fmt.Errorf("%s: the file is empty: write {\"mcpServers\": {}} and add servers to it", path)
	}
	var raw json.RawMessage
	if err := json.Unmarshal(f.data, &raw); err != nil {
		return nil, f.syntaxError(err)
	}
	root := value{raw: raw, off: skipSpace(f.data, 0, "")}
	p := &parser{f: f, cfg: &Config{Path: path}, seen: map[string]int{}}
	if root.kind() != "object" {
		return nil, f.errorf(root.off, "expected an object with \"mcpServers\" or \"servers\", found %s", root.kind())
	}
	if !p.root(root, true) {
		return nil, fmt.Errorf("%s: no servers found: expected a top-level \"mcpServers\" or \"servers\" object%s", path, p.hint)
	}
	slices.SortStableFunc(p.warnings, func(a, b warning) int { return a.off - b.off })
	for _, w := range p.warnings {
		p.cfg.Warnings = append(p.cfg.Warnings, w.msg)
	}
	if len(p.errs) > 0 {
		// The file is JSON with servers in it: the good ones are usable.
		return p.cfg, &ServerErrors{Errs: p.errs}
	}
	return p.cfg, nil
}

// ServerErrors is Parse's error for a file that is valid JSON in a known
// format but has servers that are not: the Config returned with it holds
// the servers that are fine, so an importer can add those and report the
// rest. Callers that want all or nothing just check the error.
type ServerErrors struct {
	Errs []error
}

func (e *ServerErrors) Error() string   { return errors.Join(e.Errs...).Error() }
func (e *ServerErrors) Unwrap() []error { return e.Errs }

type parser struct {
	f    *file
	cfg  *Config
	errs []error
	seen map[string]int // server name → offset of its first definition
	hint string         // for "no servers found"
	// warnings are sorted by place before they reach Config.Warnings.
	warnings []warning
}

type warning struct {
	off int
	msg string
}

func (p *parser) warn(off int, format string, args ...any) {
	p.warnings = append(p.warnings, warning{off, p.f.at(off) + ": " + fmt.Sprintf(format, args...)})
}

// root reads the top-level object (or VS Code settings' "mcp" object) and
// reports whether it held servers. Other top-level keys are ignored without
// a warning: Claude Desktop and VS Code keep unrelated settings there.
func (p *parser) root(v value, top bool) bool {
	ms, err := members(v)
	if err != nil {
		p.errs = append(p.errs, p.f.errorf(v.off, "%v", err))
		return true
	}
	found := false
	for _, m := range ms {
		switch m.key {
		case "mcpServers", "servers":
			found = true
			switch {
			case m.val.kind() == "object":
				p.serverMap(m.val)
			case m.val.kind() == "array" && m.key == "servers":
				p.serverList(m.val)
			case m.val.isNull():
			default:
				p.errs = append(p.errs, p.f.errorf(m.val.off, "%q must be an object mapping server names to servers, got %s", m.key, m.val.kind()))
			}
		case "inputs":
			p.warn(m.keyOff, "\"inputs\" are not supported: nerve does not prompt for ${input:...} values; set environment variables and write ${NAME} instead")
		case "mcp":
			if top && m.val.kind() == "object" && p.root(m.val, false) { // VS Code settings.json
				found = true
			}
		default:
			if strings.EqualFold(m.key, "mcpServers") || strings.EqualFold(m.key, "servers") {
				p.hint = fmt.Sprintf(" (found %q; keys are case-sensitive)", m.key)
			}
		}
	}
	return found
}

func (p *parser) serverMap(v value) {
	ms, err := members(v)
	if err != nil {
		p.errs = append(p.errs, p.f.errorf(v.off, "%v", err))
		return
	}
	for _, m := range ms {
		p.server(m.key, m.keyOff, m.val, false)
	}
}

// serverList reads the array form: [{"name": "fs", "command": [...]}, ...].
func (p *parser) serverList(v value) {
	items, err := elements(v)
	if err != nil {
		p.errs = append(p.errs, p.f.errorf(v.off, "%v", err))
		return
	}
	for i, it := range items {
		if it.kind() != "object" {
			p.errs = append(p.errs, p.f.errorf(it.off, "server %d of \"servers\" must be an object, got %s", i+1, it.kind()))
			continue
		}
		ms, err := members(it)
		if err != nil {
			p.errs = append(p.errs, p.f.errorf(it.off, "%v", err))
			continue
		}
		n := slices.IndexFunc(ms, func(m member) bool { return m.key == "name" })
		if n < 0 {
			p.errs = append(p.errs, p.f.errorf(it.off, "server %d of \"servers\" has no \"name\": add \"name\": \"...\"", i+1))
			continue
		}
		nv := ms[n].val
		if nv.kind() != "string" {
			p.errs = append(p.errs, p.f.errorf(nv.off, "\"name\" of a server must be a string, got %s", nv.describe()))
			continue
		}
		var name string
		_ = json.Unmarshal(nv.raw, &name) // a valid JSON string
		p.server(name, nv.off, it, true)
	}
}

// knownKeys are the server keys nerve reads, for "did you mean".
var knownKeys = []string{"type", "command", "args", "env", "cwd", "url", "headers", "inheritEnv", "disabled", "enabled", "timeout", "startTimeout", "transport", "env_passthrough"}

// server reads one server. nameOff is where its name is written.
func (p *parser) server(name string, nameOff int, v value, inList bool) {
	if err := p.readServer(name, nameOff, v, inList); err != nil {
		if disabledServer(v) {
			// Turned off in the file, and not usable either: nothing to
			// import, and no reason to fail the file for it.
			first, _, _ := strings.Cut(err.Error(), "\n")
			p.warn(nameOff, "server %q is disabled and was skipped: %s", name, posPrefix().ReplaceAllString(first, ""))
			return
		}
		p.errs = append(p.errs, err)
	}
}

// posPrefix is the "file:line:col: " an error starts with.
var posPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^.*?:\d+:\d+: `) }) // compiled on first use, not at every start

// disabledServer reports whether server object v says it is off:
// "disabled": true, or "enabled": false.
func disabledServer(v value) bool {
	ms, err := members(v)
	if err != nil {
		return false
	}
	for _, m := range ms {
		if (m.key == "disabled" && string(m.val.raw) == "true") || (m.key == "enabled" && string(m.val.raw) == "false") {
			return true
		}
	}
	return false
}

// field is one string of a server that may hold ${VAR} references.
type field struct {
	label string
	s     string
	off   int
}

func (p *parser) readServer(name string, nameOff int, v value, inList bool) error {
	f := p.f
	if name == "" {
		return f.errorf(nameOff, "a server has an empty name: give it a name")
	}
	if first, dup := p.seen[name]; dup {
		line, _, _, _ := f.pos(first)
		return f.errorf(nameOff, "server %q is defined twice (first on line %d): rename or remove one", name, line)
	}
	p.seen[name] = nameOff
	if v.kind() != "object" {
		return f.errorf(v.off, "server %q must be an object, got %s", name, v.kind())
	}
	ms, err := members(v)
	if err != nil {
		return f.errorf(v.off, "%v", err)
	}

	s := Server{Name: name}
	var (
		typ       string
		typAt     int
		typKey    string   // "type", or pflow's "transport"
		pass      []string // env_passthrough
		cmd, args []string
		disabled  bool
		fields    []field            // strings that may hold ${VAR}
		present   = map[string]int{} // key → offset, for "ignored" warnings
	)
	// str, strList and strMap decode a member or say what was expected.
	bad := func(m member, want string, got value) error {
		return f.errorf(got.off, "server %q: %q must be %s, got %s", name, m.key, want, got.describe())
	}
	str := func(m member, expandable bool) (string, error) {
		var out string
		if m.val.kind() != "string" {
			return "", bad(m, "a string", m.val)
		}
		_ = json.Unmarshal(m.val.raw, &out)
		if expandable {
			fields = append(fields, field{label: m.key, s: out, off: m.val.off})
		}
		return out, nil
	}
	strList := func(m member, label string) ([]string, error) {
		if m.val.kind() != "array" {
			return nil, bad(m, "a list of strings", m.val)
		}
		items, err := elements(m.val)
		if err != nil {
			return nil, f.errorf(m.val.off, "%v", err)
		}
		out := make([]string, len(items))
		for i, it := range items {
			if it.kind() != "string" {
				return nil, f.errorf(it.off, "server %q: %q must be a list of strings, got %s at index %d", name, m.key, it.describe(), i)
			}
			_ = json.Unmarshal(it.raw, &out[i])
			fields = append(fields, field{label: fmt.Sprintf("%s[%d]", label, i), s: out[i], off: it.off})
		}
		return out, nil
	}
	strMap := func(m member) (map[string]string, error) {
		if m.val.kind() != "object" {
			return nil, bad(m, "an object of strings", m.val)
		}
		kvs, err := members(m.val)
		if err != nil {
			return nil, f.errorf(m.val.off, "%v", err)
		}
		out := make(map[string]string, len(kvs))
		for _, kv := range kvs {
			if kv.val.kind() != "string" {
				hint := ""
				if k := kv.val.kind(); k == "number" || k == "boolean" {
					hint = fmt.Sprintf(" (write \"%s\": \"%s\")", kv.key, kv.val.raw)
				}
				return nil, f.errorf(kv.val.off, "server %q: %q value of %q must be a string, got %s%s", name, m.key, kv.key, kv.val.describe(), hint)
			}
			var sv string
			_ = json.Unmarshal(kv.val.raw, &sv)
			out[kv.key] = sv
			fields = append(fields, field{label: fmt.Sprintf("%s.%s", m.key, kv.key), s: sv, off: kv.val.off})
		}
		return out, nil
	}
	boolean := func(m member) (bool, error) {
		var b bool
		if m.val.kind() != "boolean" {
			return false, bad(m, "true or false", m.val)
		}
		_ = json.Unmarshal(m.val.raw, &b)
		return b, nil
	}

	for _, m := range ms {
		if m.val.isNull() { // null means "not set" in every format
			continue
		}
		present[m.key] = m.keyOff
		var err error
		switch m.key {
		case "name":
			var n string
			if n, err = str(m, false); err == nil && !inList && n != name {
				p.warn(m.keyOff, "server %q: \"name\" %q ignored: the server's name is its key", name, n)
			}
		case "type", "transport": // "transport": pflow's name for it
			var t string
			t, err = str(m, false)
			if err == nil && typKey != "" && !strings.EqualFold(t, typ) {
				err = f.errorf(m.val.off, "server %q: %q %q disagrees with %q %q: keep one of them", name, m.key, t, typKey, typ)
			}
			typ, typAt, typKey = t, m.val.off, m.key
		case "env_passthrough", "envPassthrough":
			// Variables the server gets from the environment nerve
			// starts it in, by name: the same as "env": {"X": "${X:-}"}.
			pass, err = strList(m, m.key)
		case "command":
			if m.val.kind() == "string" {
				var c string
				c, err = str(m, true)
				cmd = []string{c}
			} else if m.val.kind() == "array" {
				cmd, err = strList(m, "command")
			} else {
				err = bad(m, "a string or a list of strings", m.val)
			}
			if err == nil && (len(cmd) == 0 || cmd[0] == "") {
				err = f.errorf(m.val.off, "server %q: \"command\" is empty: name the program to run, e.g. \"npx\"", name)
			}
		case "args":
			args, err = strList(m, "args")
		case "env":
			s.Env, err = strMap(m)
		case "headers":
			s.Headers, err = strMap(m)
		case "cwd":
			s.Cwd, err = str(m, true)
		case "url":
			s.URL, err = str(m, true)
		case "inheritEnv":
			s.InheritEnv, err = boolean(m)
		case "disabled":
			disabled, err = boolean(m)
		case "enabled":
			var on bool
			on, err = boolean(m)
			disabled = disabled || !on
		case "timeout":
			var d node.Duration
			if m.val.kind() != "string" && m.val.kind() != "number" {
				err = bad(m, "a duration like \"30s\" or a number of seconds", m.val)
			} else if e := json.Unmarshal(m.val.raw, &d); e != nil {
				err = f.errorf(m.val.off, "server %q: \"timeout\": %v", name, e)
			} else if d < 0 {
				err = f.errorf(m.val.off, "server %q: \"timeout\" must not be negative, got %s", name, m.val.raw)
			}
			s.Timeout = time.Duration(d)
		case "startTimeout", "start_timeout":
			var d node.Duration
			if m.val.kind() != "string" && m.val.kind() != "number" {
				err = bad(m, "a duration like \"2m\" or a number of seconds", m.val)
			} else if e := json.Unmarshal(m.val.raw, &d); e != nil {
				err = f.errorf(m.val.off, "server %q: %q: %v", name, m.key, e)
			} else if d < 0 {
				err = f.errorf(m.val.off, "server %q: %q must not be negative, got %s", name, m.key, m.val.raw)
			}
			s.StartTimeout = time.Duration(d)
		case "envFile":
			p.warn(m.keyOff, "server %q: \"envFile\" is not supported and was ignored: put the variables in \"env\"", name)
		default:
			msg := fmt.Sprintf("server %q: unknown key %q ignored", name, m.key)
			if k := suggest.Closest(m.key, knownKeys); k != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", k)
			}
			p.warn(m.keyOff, "%s", msg)
		}
		if err != nil {
			return err
		}
	}

	for _, k := range pass {
		if !validVarName(k) {
			return f.errorf(present["env_passthrough"]+present["envPassthrough"], "server %q: env_passthrough: %q is not a variable name (letters, digits and _, not starting with a digit)", name, k)
		}
		if _, set := s.Env[k]; set {
			continue // "env" says what it is
		}
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env[k] = "${" + k + ":-}"
	}
	if args != nil {
		if cmd == nil {
			return f.errorf(present["args"], "server %q has \"args\" but no \"command\": add \"command\": \"...\"", name)
		}
		cmd = append(cmd, args...)
	}
	s.Command = cmd

	switch norm := strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(typ)); norm {
	case "":
		switch {
		case cmd != nil && s.URL != "":
			return f.errorf(nameOff, "server %q has both \"command\" and \"url\": add \"type\": \"stdio\" to run the command, or \"type\": \"http\" to connect to the URL", name)
		case s.URL != "":
			s.Transport = "http"
			if isSSEURL(s.URL) {
				s.Transport = "sse"
			}
		case cmd != nil:
			s.Transport = "stdio"
		default:
			return f.errorf(nameOff, "server %q has neither \"command\" nor \"url\": add \"command\" to start a local server, or \"url\" to connect to a remote one", name)
		}
	case "stdio":
		s.Transport = "stdio"
	case "http", "streamablehttp":
		s.Transport = "http"
	case "sse":
		s.Transport = "sse"
	default:
		return f.errorf(typAt, "server %q: unknown \"type\" %q: use \"stdio\", \"http\" (streamable HTTP) or \"sse\"", name, typ)
	}
	if s.Transport == "stdio" {
		if cmd == nil {
			return f.errorf(nameOff, "server %q: \"type\": %q needs a \"command\"", name, typ)
		}
		for _, k := range []string{"url", "headers"} {
			if off, ok := present[k]; ok {
				p.warn(off, "server %q: %q ignored: it is a stdio server", name, k)
			}
		}
		s.URL, s.Headers = "", nil
	} else {
		if s.URL == "" {
			return f.errorf(nameOff, "server %q: \"type\": %q needs a \"url\"", name, typ)
		}
		for _, k := range []string{"command", "args", "env", "env_passthrough", "envPassthrough", "cwd", "inheritEnv"} {
			if off, ok := present[k]; ok {
				p.warn(off, "server %q: %q ignored: it is an %s server, not a command", name, k, s.Transport)
			}
		}
		s.Command, s.Env, s.Cwd, s.InheritEnv = nil, nil, "", false
	}

	for _, fl := range fields {
		if err := checkRefs(fl.s); err != nil {
			var re *refError
			if errors.As(err, &re) && re.vscode {
				p.warn(fl.off, "server %q: %q: %v", name, fl.label, err)
				continue
			}
			return f.errorf(fl.off, "server %q: %q: %v", name, fl.label, err)
		}
	}
	if disabled {
		s.Disabled = true
		p.warn(nameOff, "server %q is disabled in the file: `nerve mcp import` adds it stopped (`nerve node start` starts it)", name)
	}
	p.cfg.Servers = append(p.cfg.Servers, s)
	return nil
}

// validVarName reports whether k can name an environment variable in a
// ${...} reference.
func validVarName(k string) bool {
	if k == "" || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// isSSEURL reports whether u's path ends in /sse, the convention of the
// older HTTP+SSE transport. u may hold ${VAR} references.
func isSSEURL(u string) bool {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	return strings.HasSuffix(strings.TrimSuffix(u, "/"), "/sse")
}
