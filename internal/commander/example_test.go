package commander_test

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nerve-dev/nerve/internal/commander"
)

func exampleIndex() *commander.Index {
	return commander.NewIndex(map[string][]*mcp.Tool{
		"fs": {{Name: "read_file", InputSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"path": map[string]any{"type": "string"}, "tail": map[string]any{"type": "integer"}},
			"required":   []any{"path"},
		}}},
		"bash": {{Name: "bash", InputSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"command": map[string]any{"type": "string"}},
			"required":   []any{"command"},
		}}},
	})
}

func ExampleParse() {
	cat := exampleIndex()
	h := &commander.History{}
	h.Add("bash", "/tmp/notes.txt\n")
	for _, line := range []string{
		`@fs read_file path=/tmp/a tail=5`,
		`@fs.read_file {"path": ":::bash[-1]"}`,
		`@bash ls -la ?`,
		`:node add bash sh --cwd "/srv/my app"`,
		`@fss ?`,
		`@fs read_file tail=abc`,
		`@`,
	} {
		ln, err := commander.Parse(line, cat, h)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("%s %s %s %s %q\n", ln.Kind, ln.Node, ln.Tool, ln.Args, ln.Argv)
	}
	// Output:
	// call fs read_file {"path":"/tmp/a","tail":5} []
	// call fs read_file {"path":"/tmp/notes.txt"} []
	// call bash bash {"command":"ls -la ?"} []
	// command    ["node" "add" "bash" "sh" "--cwd" "/srv/my app"]
	// error: unknown node "fss" — did you mean @fs? (`:node ls` lists nodes)
	// error: tail=abc: expected integer
	// error: type @NODE ? to list a node's tools (nodes: bash, fs)
}

func ExampleComplete() {
	cmds := []commander.CommandSpec{{Name: "node", Subcommands: []commander.CommandSpec{
		{Name: "add", Args: []commander.ArgSpec{{Name: "KIND", Values: []string{"bash", "mcp", "claude"}}}},
		{Name: "ls"},
	}}}
	for _, line := range []string{"@f", "@fs read_file ", ":node add "} {
		c, n := commander.Complete(line, len(line), exampleIndex(), cmds)
		fmt.Printf("%q replaces %d: %q\n", line, n, c)
	}
	// Output:
	// "@f" replaces 2: ["@fs "]
	// "@fs read_file " replaces 0: ["path=" "tail="]
	// ":node add " replaces 0: ["bash " "claude " "mcp "]
}

func ExampleRenderResult() {
	r := commander.RenderResult(&mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "here it is"},
		&mcp.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG")},
	}}, commander.RenderOptions{Style: commander.NewStyle(false)})
	// The REPL saves each attachment, then puts the paths in the text.
	r.Fill([]string{"/home/me/.local/state/nerve/blocks/7-" + r.Attachments[0].Name}, "")
	fmt.Print(r.Text)
	// Output:
	// here it is
	// [image, image/png, 4 B: /home/me/.local/state/nerve/blocks/7-image-1.png]
}
