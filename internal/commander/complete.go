package commander

import (
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CommandSpec describes one :command for completion. The REPL builds the
// tree from its command table, so `:node add <Tab>` offers node kinds.
type CommandSpec struct {
	Name        string
	Subcommands []CommandSpec
	Flags       []FlagSpec
	// Args are the positional arguments in order; the last one repeats.
	Args []ArgSpec
}

// FlagSpec is a flag ("--json", "-s"); Values are what its value may be.
type FlagSpec struct {
	Name       string
	TakesValue bool
	Values     []string
}

// ArgSpec is a positional argument: Values are its candidates, and Node
// adds the catalog's node ids.
type ArgSpec struct {
	Name   string
	Values []string
	Node   bool
}

// Complete returns what may replace the word before the cursor: node ids
// after '@' ("@fs "), tool names after "@node " ("read_file "), argument keys
// after a tool ("path="), allowed values after "key=" (enums, booleans), and
// :commands, their subcommands, flags and arguments. pos is the cursor as an
// index in runes; replaceLen is how many runes before pos the candidates
// replace. Candidates are sorted; a complete word ends with a space.
//
// Everything comes from cat and cmds: no round trip, so Tab stays fast on
// nodes with many tools.
func Complete(line string, pos int, cat Catalog, cmds []CommandSpec) (candidates []string, replaceLen int) {
	candidates, replaceLen = complete(line, pos, cat, cmds)
	if len(candidates) == 0 {
		return nil, 0
	}
	return candidates, replaceLen
}

func complete(line string, pos int, cat Catalog, cmds []CommandSpec) ([]string, int) {
	if pos < 0 {
		return nil, 0
	}
	prefix := line
	if pos < len(line) || !isASCII(line) {
		r := []rune(line)
		prefix = string(r[:min(pos, len(r))])
	}
	s := strings.TrimLeftFunc(prefix, unicode.IsSpace)
	switch {
	case s == "":
		return prefixed("@", sortedNodes(cat), "", " "), 0
	case s[0] == ':':
		return completeCommand(s[1:], cat, cmds)
	case s[0] == '@':
		return completeAt(s[1:], cat)
	}
	return nil, 0
}

func completeAt(s string, cat Catalog) ([]string, int) {
	head, after, spaced := s, "", false
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		head, after, spaced = s[:i], s[i+1:], true
	}
	if !spaced {
		node, tool, qualified := strings.Cut(head, ".")
		if qualified {
			if _, ok := cat.Tools(node); !ok {
				return nil, 0
			}
			return prefixed("@"+node+".", toolNames(cat, node), tool, " "), runeLen(head) + 1
		}
		return prefixed("@", sortedNodes(cat), head, " "), runeLen(head) + 1
	}
	node, toolName, qualified := strings.Cut(head, ".")
	tools, ok := cat.Tools(node)
	if !ok {
		return nil, 0
	}
	words, cur, ok := wordsBefore(after)
	if !ok {
		return nil, 0 // inside quotes or JSON
	}
	if !qualified {
		if len(words) == 0 {
			if len(tools) == 1 {
				return nil, 0 // free text for the node's one tool
			}
			return prefixed("", toolNames(cat, node), cur, " "), runeLen(cur)
		}
		toolName, words = words[0], words[1:]
	}
	t, ok := cat.Tool(node, toolName)
	if !ok {
		return nil, 0
	}
	return completeKeys(t, words, cur)
}

// completeKeys offers the keys not yet given, or after "key=" the values
// the schema allows.
func completeKeys(t *mcp.Tool, words []string, cur string) ([]string, int) {
	s := toolSchema(t)
	if s == nil {
		return nil, 0
	}
	if key, val, ok := strings.Cut(cur, "="); ok {
		p, known := property(s, s, key)
		if !known {
			return nil, 0
		}
		var vals []string
		for _, v := range enumValues(p) {
			vals = append(vals, enumString(v))
		}
		if len(vals) == 0 && slices.Contains(types(s, p), "boolean") {
			vals = []string{"false", "true"}
		}
		slices.Sort(vals)
		return prefixed("", vals, val, " "), runeLen(val)
	}
	used := make(map[string]bool, len(words))
	for _, w := range words {
		if k, _, ok := strings.Cut(w, "="); ok {
			used[k] = true
		}
	}
	var keys []string
	for _, k := range propertyNames(s) {
		if !used[k] {
			keys = append(keys, k)
		}
	}
	return prefixed("", keys, cur, "="), runeLen(cur)
}

func completeCommand(s string, cat Catalog, cmds []CommandSpec) ([]string, int) {
	words, cur, ok := wordsBefore(s)
	if !ok {
		return nil, 0
	}
	if len(words) == 0 {
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = c.Name
		}
		slices.Sort(names)
		return prefixed(":", names, cur, " "), runeLen(cur) + 1
	}
	var cmd *CommandSpec
	level := cmds
	positional := 0
	var pendingFlag *FlagSpec
	for _, w := range words {
		if pendingFlag != nil {
			pendingFlag = nil
			continue
		}
		if cmd != nil && strings.HasPrefix(w, "-") {
			if f := findFlag(cmd, w); f != nil && f.TakesValue && !strings.Contains(w, "=") {
				pendingFlag = f
			}
			continue
		}
		if positional == 0 {
			if i := slices.IndexFunc(level, func(c CommandSpec) bool { return c.Name == w }); i >= 0 {
				cmd = &level[i]
				level = cmd.Subcommands
				continue
			}
		}
		if cmd == nil {
			return nil, 0
		}
		positional++
	}
	if cmd == nil {
		return nil, 0
	}
	if pendingFlag != nil {
		return prefixed("", sortedCopy(pendingFlag.Values), cur, " "), runeLen(cur)
	}
	if strings.HasPrefix(cur, "-") {
		var names []string
		for _, f := range cmd.Flags {
			names = append(names, f.Name)
		}
		slices.Sort(names)
		return prefixed("", names, cur, " "), runeLen(cur)
	}
	var cands []string
	if positional == 0 && len(cmd.Subcommands) > 0 {
		for _, c := range cmd.Subcommands {
			cands = append(cands, c.Name)
		}
	} else if len(cmd.Args) > 0 {
		a := cmd.Args[min(positional, len(cmd.Args)-1)]
		cands = append(cands, a.Values...)
		if a.Node {
			cands = append(cands, cat.Nodes()...)
		}
	}
	slices.Sort(cands)
	return prefixed("", slices.Compact(cands), cur, " "), runeLen(cur)
}

func findFlag(cmd *CommandSpec, w string) *FlagSpec {
	name, _, _ := strings.Cut(w, "=")
	for i := range cmd.Flags {
		if cmd.Flags[i].Name == name {
			return &cmd.Flags[i]
		}
	}
	return nil
}

// wordsBefore splits the text before the cursor into the finished words and
// the word being typed. ok is false inside an open quote or JSON value,
// where nothing is offered.
func wordsBefore(s string) (words []string, cur string, ok bool) {
	start := -1
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
			continue
		case depth > 0:
			switch c {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			case '"':
				quote = '"'
			}
			continue
		case c == '"' || c == '\'':
			quote = c
		case c == '{' || c == '[':
			depth++
		case isSpaceByte(c):
			if start >= 0 {
				words = append(words, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if quote != 0 || depth > 0 {
		return nil, "", false
	}
	if start >= 0 {
		cur = s[start:]
	}
	return words, cur, true
}

// prefixed returns lead+name+tail for each name in sorted names that starts
// with typed; a binary search finds the range, so a 10,000-name list costs
// only the matches.
func prefixed(lead string, sorted []string, typed, tail string) []string {
	lo := sort.SearchStrings(sorted, typed)
	hi := lo
	for hi < len(sorted) && strings.HasPrefix(sorted[hi], typed) {
		hi++
	}
	if hi == lo {
		return nil
	}
	out := make([]string, 0, hi-lo)
	for _, name := range sorted[lo:hi] {
		out = append(out, lead+name+tail)
	}
	return out
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func runeLen(s string) int {
	if isASCII(s) {
		return len(s)
	}
	return len([]rune(s))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// sortedNodes is cat.Nodes(), sorted if an implementation forgot to.
func sortedNodes(cat Catalog) []string {
	nodes := cat.Nodes()
	if !slices.IsSorted(nodes) {
		nodes = sortedCopy(nodes)
	}
	return nodes
}
