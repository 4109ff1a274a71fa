package codemode

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolResult is a run as run_script answers it, on every surface (MCP
// clients, `nerve script`, an llm node's model): the structured content
// holds result, printed, calls, failed, run and, for a script that
// failed, error {message, line, column, limit}; the text — what a model
// reads — is what was printed followed by the result (a string as it is,
// anything else as JSON), or the error at its line and column. A script
// that failed is a result with IsError.
func ToolResult(res *Result, err error) *mcp.CallToolResult {
	if res == nil {
		res = &Result{}
	}
	sc := map[string]any{"result": res.Value, "calls": res.Calls, "run": res.Run}
	if res.Printed != "" {
		sc["printed"] = res.Printed
	}
	if res.Failed > 0 {
		sc["failed"] = res.Failed
	}
	var text strings.Builder
	if res.Printed != "" {
		text.WriteString(res.Printed)
		if !strings.HasSuffix(res.Printed, "\n") {
			text.WriteByte('\n')
		}
	}
	if err != nil {
		e := &Error{Msg: err.Error()}
		errors.As(err, &e)
		se := map[string]any{"message": e.Msg}
		if e.Line > 0 {
			se["line"], se["column"] = e.Line, e.Column
		}
		if e.Limit != "" {
			se["limit"] = e.Limit
		}
		sc["error"] = se
		delete(sc, "result")
		if res.Printed != "" {
			text.WriteString("\n")
		}
		text.WriteString("Error: " + e.Error())
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text.String()}}, StructuredContent: sc, IsError: true}
	}
	switch v := res.Value.(type) {
	case nil:
		if res.Printed == "" {
			text.WriteString("(the script set no result)")
		}
	case string:
		text.WriteString(v)
	default:
		b, jerr := json.Marshal(v)
		if jerr != nil {
			b = []byte(jerr.Error())
		}
		text.Write(b)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text.String()}}, StructuredContent: sc}
}

// hints are what to write instead of the Python a syntax error most often
// comes from.
var hints = []struct{ has, hint string }{
	{"got import", "scripts have no import: json and every visible tool are already defined"},
	{"got from", "scripts have no import: json and every visible tool are already defined"},
	{"got try", "scripts have no try/except: a failed call returns an error value — test it with is_error(r)"},
	{"got raise", `use fail("message") to stop a script with an error`},
	{"got class", "scripts have no classes: use dicts and functions"},
	{"got with", "scripts have no with: there are no files to open, only tools"},
	{"got string literal", `f-strings and adjacent literals are not supported: use "%s" % x, "{}".format(x) or +`},
	{"got '**'", "Starlark has no ** operator: multiply, or use a loop"},
	{"got del", "scripts have no del: assign None, or pop from a dict or list"},
}

// hint adds to a compile error what to write instead; an undefined name
// is said to be no visible node (a hidden node's name is as unknown as
// one that does not exist).
func hint(msg string) string {
	for _, h := range hints {
		if strings.Contains(msg, h.has) {
			return msg + " (" + h.hint + ")"
		}
	}
	if name, ok := strings.CutPrefix(msg, "undefined: "); ok {
		name, _, _ = strings.Cut(name, " ")
		return msg + fmt.Sprintf(": no builtin and no node visible to this script is called %s (tool(\"node.tool\") reaches a tool by its name; run_script's description lists the visible tools)", name)
	}
	return msg
}
