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
	// Source is where the server is written: the file and the line of its
	// name. Parse sets it; an mcp node built from the server names it in
	// its errors (issue 27).
	Source *Source
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
	f := &file{path: path, data: data}
	if len(bytes.TrimSpace(f.data)) == 0 {
		return nil, f.emptyError()
	}
	root, err := f.read()
	if err != nil {
		return nil, err
	}
	p := &parser{f: f, cfg: &Config{Path: path}, seen: map[string]int{}}
	if root.kind() != "object" {
		return nil, f.errorf(root.off(), "expected an object with \"mcpServers\" or \"servers\", found %s", root.kind())
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
	found := false
	for _, m := range members(v) {
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
				p.errs = append(p.errs, p.f.errorf(m.val.off(), "%q must be an object mapping server names to servers, got %s", m.key, m.val.kind()))
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
	for _, m := range members(v) {
		p.server(m.key, m.keyOff, m.val, false)
	}
}

// serverList reads the array form: [{"name": "fs", "command": [...]}, ...].
// An entry without a name is named after what it runs (issue 27: the
// seeds' configs have such entries), never with a name another entry
// writes.
func (p *parser) serverList(v value) {
	items := elements(v)
	written := map[string]int{}
	for _, it := range items {
		if nv, ok := nameOf(it); ok && nv.kind() == "string" {
			written[nv.str()] = nv.off()
		}
	}
	for i, it := range items {
		if it.kind() != "object" {
			p.errs = append(p.errs, p.f.errorf(it.off(), "server %d of \"servers\" must be an object, got %s", i+1, it.kind()))
			continue
		}
		nv, ok := nameOf(it)
		if !ok {
			name := uniqueName(entryName(it), written, p.seen)
			written[name] = it.off()
			p.warn(it.off(), "a server of \"servers\" has no \"name\": named it %q after what it runs (add \"name\": \"...\" to choose)", name)
			p.server(name, it.off(), it, true)
			continue
		}
		if nv.kind() != "string" {
			p.errs = append(p.errs, p.f.errorf(nv.off(), "\"name\" of a server must be a string, got %s", nv.describe()))
			continue
		}
		p.server(nv.str(), nv.off(), it, true)
	}
}

// nameOf is the "name" member of an entry of the array form.
func nameOf(it value) (value, bool) {
	if it.kind() != "object" {
		return value{}, false
	}
	for _, m := range members(it) {
		if m.key == "name" {
			return m.val, true
		}
	}
	return value{}, false
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
	for _, m := range members(v) {
		if (m.key == "disabled" && string(m.val.raw()) == "true") || (m.key == "enabled" && string(m.val.raw()) == "false") {
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

// readServer reads one server object into p.cfg.Servers, or returns the
// first thing wrong with it.
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
		return f.errorf(v.off(), "server %q must be an object, got %s", name, v.kind())
	}
	r := &serverReader{p: p, f: f, name: name, nameOff: nameOff, inList: inList,
		s: Server{Name: name, Source: &Source{File: f.path, Line: f.lineOf(nameOff), Server: name}}, present: map[string]int{}}
	for _, m := range members(v) {
		if m.val.isNull() { // null means "not set" in every format
			continue
		}
		r.present[m.key] = m.keyOff
		if err := r.member(m); err != nil {
			return err
		}
	}
	for _, step := range []func() error{r.nearMisses, r.passThrough, r.joinArgs, r.transport, r.checkRefs} {
		if err := step(); err != nil {
			return err
		}
	}
	if r.disabled {
		r.s.Disabled = true
		p.warn(nameOff, "server %q is disabled in the file: `nerve mcp import` adds it stopped (`nerve node start` starts it)", name)
	}
	p.cfg.Servers = append(p.cfg.Servers, r.s)
	return nil
}

// serverReader reads the members of one server object: the Server as far
// as it is known, and what the members said that is settled once all are
// read (the type, the command and its args, what is present).
type serverReader struct {
	p       *parser
	f       *file
	name    string
	nameOff int
	inList  bool // the array form, where "name" is the server's name

	s         Server
	typ       string
	typAt     int
	typKey    string   // "type", or pflow's "transport"
	pass      []string // env_passthrough
	cmd, args []string
	disabled  bool
	fields    []field        // strings that may hold ${VAR}
	present   map[string]int // key → offset, for "ignored" warnings
	misses    []nearMiss     // unknown keys close to ones that matter
}

// member reads one member of the server object.
func (r *serverReader) member(m member) error {
	var err error
	switch m.key {
	case "name":
		var n string
		if n, err = r.str(m, false); err == nil && !r.inList && n != r.name {
			r.p.warn(m.keyOff, "server %q: \"name\" %q ignored: the server's name is its key", r.name, n)
		}
	case "type", "transport": // "transport": pflow's name for it
		err = r.readType(m)
	case "env_passthrough", "envPassthrough":
		// Variables the server gets from the environment nerve
		// starts it in, by name: the same as "env": {"X": "${X:-}"}.
		r.pass, err = r.strList(m, m.key)
	case "command":
		err = r.readCommand(m)
	case "args":
		r.args, err = r.strList(m, "args")
	case "env":
		r.s.Env, err = r.strMap(m)
	case "headers":
		r.s.Headers, err = r.strMap(m)
	case "cwd":
		r.s.Cwd, err = r.str(m, true)
	case "url":
		r.s.URL, err = r.str(m, true)
	case "inheritEnv":
		r.s.InheritEnv, err = r.boolean(m)
	case "disabled":
		r.disabled, err = r.boolean(m)
	case "enabled":
		var on bool
		on, err = r.boolean(m)
		r.disabled = r.disabled || !on
	case "timeout":
		r.s.Timeout, err = r.duration(m, "30s")
	case "startTimeout", "start_timeout":
		r.s.StartTimeout, err = r.duration(m, "2m")
	case "envFile":
		r.p.warn(m.keyOff, "server %q: \"envFile\" is not supported and was ignored: put the variables in \"env\"", r.name)
	default:
		if k := suggest.Closest(m.key, knownKeys); k != "" && mattersIfMissing[k] != "" {
			// Settled once every key is read (nearMisses): the key it
			// stands for may be there too.
			r.misses = append(r.misses, nearMiss{key: m.key, off: m.keyOff, meant: k})
			return nil
		}
		msg := fmt.Sprintf("server %q: unknown key %q ignored", r.name, m.key)
		if k := suggest.Closest(m.key, knownKeys); k != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", k)
		}
		r.p.warn(m.keyOff, "%s", msg)
	}
	return err
}

// mattersIfMissing says, for each key whose absence changes what runs,
// what nerve would do without it: a server whose unknown key is a near
// miss of one of these ("arg") is refused with did-you-mean, not started
// without its arguments to fail after its start timeout (issue 27).
var mattersIfMissing = map[string]string{
	"command":         "with no command",
	"args":            "without its arguments",
	"url":             "with no URL",
	"type":            "with the transport guessed from its command or URL",
	"env":             "without those variables",
	"env_passthrough": "without those variables",
	"headers":         "without those headers",
	"cwd":             "in the config file's folder",
	"disabled":        "although the file means to disable it",
	"enabled":         "ignoring whether the file enables it",
}

// nearMiss is an unknown key of a server that is a near miss of a key
// that matters (mattersIfMissing).
type nearMiss struct {
	key, meant string
	off        int
}

// nearMisses refuses a server with a near miss of a key that matters and
// not that key itself; beside the key it stands for, it is only warned of.
func (r *serverReader) nearMisses() error {
	for _, m := range r.misses {
		if _, ok := r.present[m.meant]; ok {
			r.p.warn(m.off, "server %q: unknown key %q ignored (did you mean %q? it is there too)", r.name, m.key, m.meant)
			continue
		}
		return r.f.errorf(m.off, "server %q: unknown key %q — did you mean %q? nerve would start the server %s: rename the key", r.name, m.key, m.meant, mattersIfMissing[m.meant])
	}
	return nil
}

// readType reads "type" (or "transport"); both may be written if they agree.
func (r *serverReader) readType(m member) error {
	t, err := r.str(m, false)
	if err == nil && r.typKey != "" && !strings.EqualFold(t, r.typ) {
		err = r.f.errorf(m.val.off(), "server %q: %q %q disagrees with %q %q: keep one of them", r.name, m.key, t, r.typKey, r.typ)
	}
	r.typ, r.typAt, r.typKey = t, m.val.off(), m.key
	return err
}

// readCommand reads "command": a program, or a program and its arguments.
func (r *serverReader) readCommand(m member) error {
	var err error
	switch m.val.kind() {
	case "string":
		var c string
		c, err = r.str(m, true)
		r.cmd = []string{c}
	case "array":
		r.cmd, err = r.strList(m, "command")
	default:
		err = r.bad(m, "a string or a list of strings", m.val)
	}
	if err == nil && (len(r.cmd) == 0 || r.cmd[0] == "") {
		err = r.f.errorf(m.val.off(), "server %q: \"command\" is empty: name the program to run, e.g. \"npx\"", r.name)
	}
	return err
}

// bad says what a member should have been.
func (r *serverReader) bad(m member, want string, got value) error {
	return r.f.errorf(got.off(), "server %q: %q must be %s, got %s", r.name, m.key, want, got.describe())
}

// str decodes a string member; expandable ones are checked for ${VAR}
// references once the server is read.
func (r *serverReader) str(m member, expandable bool) (string, error) {
	if m.val.kind() != "string" {
		return "", r.bad(m, "a string", m.val)
	}
	out := m.val.str()
	if expandable {
		r.fields = append(r.fields, field{label: m.key, s: out, off: m.val.off()})
	}
	return out, nil
}

// strList decodes a list of strings; label names its items in messages.
func (r *serverReader) strList(m member, label string) ([]string, error) {
	if m.val.kind() != "array" {
		return nil, r.bad(m, "a list of strings", m.val)
	}
	items := elements(m.val)
	out := make([]string, len(items))
	for i, it := range items {
		if it.kind() != "string" {
			return nil, r.f.errorf(it.off(), "server %q: %q must be a list of strings, got %s at index %d", r.name, m.key, it.describe(), i)
		}
		out[i] = it.str()
		r.fields = append(r.fields, field{label: fmt.Sprintf("%s[%d]", label, i), s: out[i], off: it.off()})
	}
	return out, nil
}

// strMap decodes an object of strings ("env", "headers").
func (r *serverReader) strMap(m member) (map[string]string, error) {
	if m.val.kind() != "object" {
		return nil, r.bad(m, "an object of strings", m.val)
	}
	kvs := members(m.val)
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		if kv.val.kind() != "string" {
			hint := ""
			if k := kv.val.kind(); k == "number" || k == "boolean" {
				hint = fmt.Sprintf(" (write \"%s\": \"%s\")", kv.key, kv.val.raw())
			}
			return nil, r.f.errorf(kv.val.off(), "server %q: %q value of %q must be a string, got %s%s", r.name, m.key, kv.key, kv.val.describe(), hint)
		}
		sv := kv.val.str()
		out[kv.key] = sv
		r.fields = append(r.fields, field{label: fmt.Sprintf("%s.%s", m.key, kv.key), s: sv, off: kv.val.off()})
	}
	return out, nil
}

func (r *serverReader) boolean(m member) (bool, error) {
	if m.val.kind() != "boolean" {
		return false, r.bad(m, "true or false", m.val)
	}
	return string(m.val.raw()) == "true", nil
}

// duration decodes a duration ("30s") or a number of seconds; example is
// the one a message suggests.
func (r *serverReader) duration(m member, example string) (time.Duration, error) {
	var d node.Duration
	if m.val.kind() != "string" && m.val.kind() != "number" {
		return 0, r.bad(m, "a duration like \""+example+"\" or a number of seconds", m.val)
	}
	if err := json.Unmarshal(m.val.raw(), &d); err != nil {
		return 0, r.f.errorf(m.val.off(), "server %q: %q: %v", r.name, m.key, err)
	}
	if d < 0 {
		return 0, r.f.errorf(m.val.off(), "server %q: %q must not be negative, got %s", r.name, m.key, m.val.raw())
	}
	return time.Duration(d), nil
}

// passThrough turns env_passthrough's names into "env" entries
// ("X": "${X:-}") where "env" does not set them.
func (r *serverReader) passThrough() error {
	for _, k := range r.pass {
		if !validVarName(k) {
			return r.f.errorf(r.present["env_passthrough"]+r.present["envPassthrough"], "server %q: env_passthrough: %q is not a variable name (letters, digits and _, not starting with a digit)", r.name, k)
		}
		if _, set := r.s.Env[k]; set {
			continue // "env" says what it is
		}
		if r.s.Env == nil {
			r.s.Env = map[string]string{}
		}
		r.s.Env[k] = "${" + k + ":-}"
	}
	return nil
}

// joinArgs makes the command: "command" followed by "args".
func (r *serverReader) joinArgs() error {
	if r.args != nil {
		if r.cmd == nil {
			return r.f.errorf(r.present["args"], "server %q has \"args\" but no \"command\": add \"command\": \"...\"", r.name)
		}
		r.cmd = append(r.cmd, r.args...)
	}
	r.s.Command = r.cmd
	return nil
}

// transport settles the transport, from "type" or from what the server
// has, and drops (with a warning) the keys the other transports use.
func (r *serverReader) transport() error {
	if err := r.pickTransport(); err != nil {
		return err
	}
	s := &r.s
	if s.Transport == "stdio" {
		if r.cmd == nil {
			return r.f.errorf(r.nameOff, "server %q: \"type\": %q needs a \"command\"", r.name, r.typ)
		}
		r.ignored([]string{"url", "headers"}, "it is a stdio server")
		s.URL, s.Headers = "", nil
		return nil
	}
	if s.URL == "" {
		return r.f.errorf(r.nameOff, "server %q: \"type\": %q needs a \"url\"", r.name, r.typ)
	}
	r.ignored([]string{"command", "args", "env", "env_passthrough", "envPassthrough", "cwd", "inheritEnv"}, "it is an "+s.Transport+" server, not a command")
	s.Command, s.Env, s.Cwd, s.InheritEnv = nil, nil, "", false
	return nil
}

// pickTransport sets s.Transport from "type", or without one from
// "command" or "url".
func (r *serverReader) pickTransport() error {
	s := &r.s
	switch norm := strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(r.typ)); norm {
	case "":
		switch {
		case r.cmd != nil && s.URL != "":
			return r.f.errorf(r.nameOff, "server %q has both \"command\" and \"url\": add \"type\": \"stdio\" to run the command, or \"type\": \"http\" to connect to the URL", r.name)
		case s.URL != "":
			s.Transport = "http"
			if isSSEURL(s.URL) {
				s.Transport = "sse"
			}
		case r.cmd != nil:
			s.Transport = "stdio"
		default:
			return r.f.errorf(r.nameOff, "server %q has neither \"command\" nor \"url\": add \"command\" to start a local server, or \"url\" to connect to a remote one", r.name)
		}
	case "stdio":
		s.Transport = "stdio"
	case "http", "streamablehttp":
		s.Transport = "http"
	case "sse":
		s.Transport = "sse"
	default:
		return r.f.errorf(r.typAt, "server %q: unknown \"type\" %q: use \"stdio\", \"http\" (streamable HTTP) or \"sse\"", r.name, r.typ)
	}
	return nil
}

// ignored warns about each of keys the server has: why says why it is
// ignored.
func (r *serverReader) ignored(keys []string, why string) {
	for _, k := range keys {
		if off, ok := r.present[k]; ok {
			r.p.warn(off, "server %q: %q ignored: %s", r.name, k, why)
		}
	}
}

// checkRefs checks the ${VAR} references of every expandable string;
// VS Code's ${input:...} and the like are warnings.
func (r *serverReader) checkRefs() error {
	for _, fl := range r.fields {
		if err := checkRefs(fl.s); err != nil {
			var re *refError
			if errors.As(err, &re) && re.vscode {
				r.p.warn(fl.off, "server %q: %q: %v", r.name, fl.label, err)
				continue
			}
			return r.f.errorf(fl.off, "server %q: %q: %v", r.name, fl.label, err)
		}
	}
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
