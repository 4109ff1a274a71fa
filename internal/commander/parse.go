package commander

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Parse parses one Commander line (possibly several physical lines joined
// with "\n" while Incomplete said the JSON was still open). cat supplies the
// nodes and their tools; refs resolves block references and may be nil.
//
// Errors are one line and say what to type instead.
func Parse(input string, cat Catalog, refs Refs) (*Line, error) {
	s := strings.TrimSpace(input)
	ln := &Line{Input: s}
	switch {
	case s == "":
		ln.Kind = Empty
		return ln, nil
	case s == "?":
		ln.Kind, ln.Argv = Command, []string{"help"}
		return ln, nil
	case s[0] == ':':
		argv, err := SplitArgv(s[1:])
		if err != nil {
			return nil, err
		}
		if len(argv) == 0 {
			return nil, errors.New("type a command after ':' — :help lists them")
		}
		ln.Kind, ln.Argv = Command, argv
		return ln, nil
	case strings.HasPrefix(s, "@?"):
		ln.Kind, ln.Words = Search, strings.TrimSpace(s[2:])
		if ln.Words == "" {
			return nil, errors.New("type what the tool should do after @?: @? read a file")
		}
		return ln, nil
	case s[0] == '@':
		return parseAt(ln, s[1:], cat, refs)
	}
	word, _ := cutSpace(s)
	if _, ok := cat.Tools(word); ok {
		return nil, fmt.Errorf("start a call with @: @%s", s)
	}
	return nil, fmt.Errorf("a line is @NODE TOOL ... to call a tool or :COMMAND (try :help; %s)", nodeList(cat))
}

// parseAt parses what follows '@'.
func parseAt(ln *Line, s string, cat Catalog, refs Refs) (*Line, error) {
	head, rest := cutSpace(s)
	if head == "" {
		if next, _ := cutSpace(rest); next != "" {
			if _, ok := cat.Tools(next); ok {
				return nil, fmt.Errorf("no space after @: type @%s", rest)
			}
		}
		return nil, fmt.Errorf("type @NODE ? to list a node's tools (%s)", nodeList(cat))
	}
	if rest == "" && len(head) > 1 && strings.HasSuffix(head, "?") {
		head, rest = strings.TrimSuffix(head, "?"), "?" // `@fs?`
	}
	nodeID, toolName, qualified := strings.Cut(head, ".")
	tools, ok := cat.Tools(nodeID)
	if !ok {
		return nil, unknownNode(nodeID, cat)
	}
	ln.Node = nodeID
	if qualified {
		if toolName == "" {
			return nil, fmt.Errorf("missing tool name after @%s. — type `@%s ?` to list its tools", nodeID, nodeID)
		}
		t, ok := cat.Tool(nodeID, toolName)
		if !ok {
			return nil, unknownTool(nodeID, toolName, cat)
		}
		return parseToolArgs(ln, t, rest, refs, true)
	}

	single := len(tools) == 1
	if rest == "" || rest == "?" {
		if single {
			ln.Kind, ln.Tool = ToolHelp, tools[0].Name
		} else {
			ln.Kind = NodeHelp
		}
		return ln, nil
	}

	word, after := cutSpace(rest)
	if single {
		t := tools[0]
		raw := rawParam(t)
		// `@g run` alone is the call without arguments (a graph runs with
		// its defaults), never the text "run" (issue 17). After the tool's
		// name, arguments are judged as after any tool's name
		// (argsAfterName): `@id identity tex=hi` is a misspelt key, never
		// the text "identity tex=hi" (issue 27).
		if word == t.Name && (raw == "" || after == "" || after == "?" || argsAfterName(toolSchema(t), after)) {
			return parseToolArgs(ln, t, after, refs, true)
		}
		if raw == "" || readsAsArgs(rest) {
			// No parameter takes free text, or the line reads as arguments
			// (`@review file=README.md`, `@fan fiel=x`, `@bash {"command":
			// "ls"}`): the rest is the tool's arguments, and a key the tool
			// does not have is an error, never the text (issue 17).
			return parseToolArgs(ln, t, rest, refs, false)
		}
		// `@bash ls -la ?`: the whole rest, '?' and all, is the text.
		return textCall(ln, t, raw, rest, refs)
	}
	if t, ok := cat.Tool(nodeID, word); ok {
		return parseToolArgs(ln, t, after, refs, true)
	}
	if t, ok := cat.Tool(nodeID, strings.TrimSuffix(word, "?")); ok && after == "" && strings.HasSuffix(word, "?") {
		ln.Kind, ln.Tool = ToolHelp, t.Name // `@fs read_file?`
		return ln, nil
	}
	if len(tools) == 0 {
		// The node's tools are not listed yet (starting, failed): pass the
		// call on unchecked; the node itself will judge it.
		return parseToolArgs(ln, &mcp.Tool{Name: word}, after, refs, true)
	}
	return nil, unknownTool(nodeID, word, cat)
}

// argsAfterName reports whether what follows a tool's name reads as its
// arguments rather than as text for its free-text parameter: a JSON
// object or anything else starting with '{', words that are all
// KEY=VALUE, or a first word KEY=VALUE whose KEY is one of the tool's
// parameters or a near miss of one (`@fs search qurey=x y`,
// `@bash bash comand=pwd`). It is the one rule after a tool's name, for
// a node of many tools and for a single-tool node whose tool is named
// (`@bash bash script.sh` runs "bash script.sh"): a mistyped key is an
// error with did-you-mean, never text (issue 17, issue 27).
func argsAfterName(s map[string]any, after string) bool {
	if strings.HasPrefix(after, "{") {
		return true
	}
	key, ok := leadingKey(after)
	if !ok {
		return false
	}
	if _, known := property(s, s, key); known {
		return true
	}
	return DidYouMean(key, propertyNames(s)) != "" || readsAsArgs(after)
}

// readsAsArgs reports whether text reads as a call's arguments rather than
// free text: a JSON object (`{"command": "ls"}`; `{ ls; }` is text), or
// words that are all KEY=VALUE (`file=README.md`, `fiel=x`; `FOO=1 env`
// is text). A line that reads as arguments is parsed as such, so a
// mistyped key is an error, never the value of the free-text parameter.
// To give such text as the value, quote it (`@echo "a=1"`) or name the
// parameter (`@echo text=a=1`).
func readsAsArgs(text string) bool {
	text = strings.TrimSpace(text)
	if strings.HasPrefix(text, "{") {
		var v map[string]json.RawMessage
		return json.Unmarshal([]byte(text), &v) == nil
	}
	kv, err := splitKeyValues(text)
	return err == nil && len(kv) > 0
}

// parseToolArgs parses the arguments of a known tool. afterName says whether
// the tool was named on the line (so a lone '?' asks for its help).
func parseToolArgs(ln *Line, t *mcp.Tool, rest string, refs Refs, afterName bool) (*Line, error) {
	ln.Tool = t.Name
	if rest == "?" && afterName {
		ln.Kind = ToolHelp
		return ln, nil
	}
	ln.Kind = Call
	s := toolSchema(t)
	switch {
	case rest == "":
		ln.Form, ln.Args = FormNone, []byte("{}")
		return ln, checkRequired(ln, s, nil)
	case rest[0] == '{':
		ln.Form = FormJSON
		args, err := parseJSONArgs(ln, s, rest, refs)
		if err != nil {
			return nil, err
		}
		ln.Args = args
		return ln, nil
	}
	raw := rawParam(t)
	if _, ok := leadingKey(rest); ok {
		// An unknown key close to a known one is a typo, not text; so is
		// a line of nothing but key=value words.
		if raw == "" || argsAfterName(s, rest) {
			ln.Form = FormKeyValue
			args, err := parseKeyValues(ln, s, rest, refs)
			if err != nil {
				return nil, err
			}
			ln.Args = args
			return ln, nil
		}
	}
	if raw == "" {
		if s == nil {
			return nil, fmt.Errorf("the tools of @%s are not listed yet, so free text cannot be matched to a parameter — write key=value or {JSON}, or wait until `:node info %s` says ready", ln.Node, ln.Node)
		}
		return nil, fmt.Errorf("@%s %s takes key=value or {JSON} arguments, not free text — e.g. %s (`@%s %s ?` shows its parameters)", ln.Node, t.Name, exampleKV(ln.Node, t, false), ln.Node, t.Name)
	}
	if afterName {
		rest = unquoteWhole(rest)
	}
	return textCall(ln, t, raw, rest, refs)
}

// textCall calls t with text as its free-text parameter.
func textCall(ln *Line, t *mcp.Tool, param, text string, refs Refs) (*Line, error) {
	text, err := substituteText(text, refs)
	if err != nil {
		return nil, err
	}
	ln.Kind, ln.Tool, ln.Form, ln.Param = Call, t.Name, FormText, param
	b := make([]byte, 0, len(text)+len(param)+8)
	b = append(b, '{')
	b = appendJSONString(b, param)
	b = append(b, ':')
	b = appendJSONString(b, text)
	ln.Args = append(b, '}')
	return ln, nil
}

// unquoteWhole removes the quotes around text that is one quoted word
// (`@fs search "two words"`), and leaves any other text alone.
func unquoteWhole(s string) string {
	if len(s) < 2 || (s[0] != '"' && s[0] != '\'') {
		return s
	}
	words, err := SplitArgv(s)
	if err != nil || len(words) != 1 || s[len(s)-1] != s[0] {
		return s
	}
	return words[0]
}

// leadingKey reports whether s starts with `key=` (a key made of letters,
// digits, '_', '-', '.', '$', '@').
func leadingKey(s string) (string, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '=':
			return s[:i], i > 0
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.', c == '$', c == '@':
		default:
			return "", false
		}
	}
	return "", false
}

// cutSpace splits s at its first run of white space; both parts are
// trimmed.
func cutSpace(s string) (word, rest string) {
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

func unknownNode(id string, cat Catalog) error {
	nodes := cat.Nodes()
	hint := "(`:node ls` lists nodes)"
	if s := DidYouMean(id, nodes); s != "" {
		hint = "did you mean @" + s + "? " + hint
	} else if len(nodes) > 0 {
		hint = nodeList(cat) + "; `:node add KIND " + suggestNodeID(id) + "` adds one"
	}
	if !validNodeID(id) {
		return fmt.Errorf("invalid node id %q: ids are lower-case a-z, 0-9, '_' and '-' — %s", id, hint)
	}
	return fmt.Errorf("unknown node %q — %s", id, hint)
}

func suggestNodeID(id string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(id) {
		if r < utf8.RuneSelf && isNodeIDByte(byte(r)) {
			b.WriteRune(r)
		}
	}
	out := strings.TrimLeft(b.String(), "_-")
	if out == "" {
		return "NAME"
	}
	return out
}

func unknownTool(node, tool string, cat Catalog) error {
	hint := fmt.Sprintf("`@%s ?` lists its tools", node)
	if s := DidYouMean(tool, toolNames(cat, node)); s != "" {
		hint = "did you mean " + s + "? " + hint
	}
	return fmt.Errorf("unknown tool %q on @%s — %s", tool, node, hint)
}

// SplitArgv splits a :command line into words like a shell: white space
// separates words; '…' keeps everything literally; "…" keeps everything but
// \" and \\; a backslash outside quotes escapes the next character.
func SplitArgv(s string) ([]string, error) {
	var (
		argv  []string
		cur   strings.Builder
		inArg bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inArg {
				argv = append(argv, cur.String())
				cur.Reset()
				inArg = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unclosed ' quote — close it, or write \\' for a literal quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inArg = true
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' && j+1 < len(s) && (s[j+1] == '"' || s[j+1] == '\\') {
					j++
				}
				cur.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, errors.New(`unclosed " quote — close it, or write \" for a literal quote`)
			}
			i = j
			inArg = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inArg = true
		default:
			cur.WriteByte(c)
			inArg = true
		}
	}
	if inArg {
		argv = append(argv, cur.String())
	}
	return argv, nil
}

// Incomplete reports whether text (the lines typed so far, joined with "\n")
// is an @-line whose JSON is still open — a '{' (or, after '=', a '[') not
// yet closed, or a JSON string not yet ended — so the REPL should read
// another line before parsing. A '{' starting a word opens JSON even in free
// text, so a bash function `f() {` may also span lines.
func Incomplete(text string) bool {
	s := strings.TrimSpace(text)
	if !strings.HasPrefix(s, "@") {
		return false
	}
	depth := 0
	inStr, esc := false, false
	var shellQuote byte
	prev := byte(' ')
	for i := 1; i < len(s); i++ {
		c := s[i]
		if depth > 0 {
			switch {
			case inStr && esc:
				esc = false
			case inStr && c == '\\':
				esc = true
			case c == '"':
				inStr = !inStr
			case inStr:
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
			}
		} else {
			switch {
			case shellQuote != 0:
				if c == shellQuote {
					shellQuote = 0
				}
			case c == '\'' || c == '"':
				shellQuote = c
			case c == '{' && (isSpaceByte(prev) || prev == '='), c == '[' && prev == '=':
				depth = 1
			}
		}
		prev = c
	}
	return depth > 0 || inStr
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
