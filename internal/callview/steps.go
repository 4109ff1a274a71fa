package callview

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Steps words an agent's steps — an llm or a claude node's tool calls,
// their results, its thinking, the tokens it used — as a person reads
// them, one line each, the same in the Commander and on `nerve call`'s
// stderr: `→ fs.read_file path=/tmp/a`, `← fs.read_file: hello`, `· 120
// in, 8 out tokens (gpt-4o-mini)`. The Commander showed the events' raw
// JSON and `nerve call` nothing (issue 27). A call's steps go through one
// Steps, which remembers each tool call's name for its result.
type Steps struct {
	names map[string]string // tool call id → tool
}

// stepWidth bounds a step line: the call's own output is what matters.
const stepWidth = 160

// Line is the line for the step event named step with data, or "" for a
// step not worth a line (a claude node's init).
func (v *Steps) Line(step string, data []byte) string {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		if step == "" {
			return ""
		}
		return Clip(step+" "+strings.TrimSpace(string(data)), stepWidth)
	}
	str := func(k string) string { s, _ := m[k].(string); return s }
	num := func(k string) (float64, bool) { f, ok := m[k].(float64); return f, ok }
	var line string
	switch step {
	case "tool_call", "tool_use":
		name := cmp.Or(str("tool"), str("name"))
		if id := str("id"); id != "" {
			if v.names == nil {
				v.names = map[string]string{}
			}
			v.names[id] = name
		}
		args := m["arguments"]
		if args == nil {
			args = m["input"]
		}
		line = "→ " + name
		if a := argsText(args); a != "" {
			line += " " + a
		}
	case "tool_result":
		name := cmp.Or(str("tool"), v.names[str("id")], v.names[str("tool_use_id")], "tool")
		mark := "← "
		if e, _ := m["is_error"].(bool); e {
			mark = "✗ "
		}
		text := cmp.Or(str("text"), contentText(m["content"]))
		line = mark + name + ": " + FirstLine(strings.TrimSpace(text))
	case "thinking":
		line = "… " + FirstLine(strings.TrimSpace(str("text")))
	case "usage":
		in, ok1 := num("prompt_tokens")
		out, ok2 := num("completion_tokens")
		if !ok1 && !ok2 {
			in, _ = num("input_tokens") // claude's
			out, _ = num("output_tokens")
		}
		line = fmt.Sprintf("· %s in, %s out tokens", count(in), count(out))
		if model := str("model"); model != "" {
			line += " (" + model + ")"
		}
	case "context":
		est, _ := num("estimated_tokens")
		budget, _ := num("budget")
		after, _ := num("estimated_tokens_after")
		results, _ := num("dropped_tool_results")
		msgs, _ := num("dropped_messages")
		line = fmt.Sprintf("· context ~%s tokens, over its budget of %s: %s old tool results and %s messages left out, ~%s now",
			count(est), count(budget), count(results), count(msgs), count(after))
	case "cost":
		turn, _ := num("turn_cost_usd")
		total, _ := num("total_cost_usd")
		ms, _ := num("duration_ms")
		line = fmt.Sprintf("· $%.4f this turn ($%.4f in all), %s", turn, total, strconv.FormatFloat(ms/1000, 'f', 1, 64)+"s")
	case "init", "":
		return ""
	default:
		line = step + " " + strings.TrimSpace(string(data))
	}
	return Clip(line, stepWidth)
}

// argsText is a tool call's arguments as key=value words: strings as
// they are (quoted when they hold a space or are empty), other values as
// JSON.
func argsText(args any) string {
	obj, ok := args.(map[string]any)
	if !ok {
		if args == nil {
			return ""
		}
		b, _ := json.Marshal(args)
		return string(b)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	words := make([]string, 0, len(keys))
	for _, k := range keys {
		var val string
		if s, ok := obj[k].(string); ok {
			val = s
			if s == "" || strings.ContainsAny(s, " \t\n\"'") {
				val = strconv.Quote(s)
			}
		} else {
			b, _ := json.Marshal(obj[k])
			val = string(b)
		}
		words = append(words, k+"="+val)
	}
	return strings.Join(words, " ")
}

// contentText is a claude tool result's content: a string, or the text of
// its text blocks.
func contentText(c any) string {
	switch c := c.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, b := range c {
			if m, ok := b.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					parts = append(parts, t)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// count is a token count for people: 1234 is 1,234.
func count(f float64) string {
	s := strconv.FormatFloat(f, 'f', 0, 64)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
