package claude

import (
	"encoding/json"
	"strings"

	"github.com/nerve-dev/nerve/pkg/node"
)

// message is the part of a stream-json line the node reads. The protocol is
// Claude Code's (the Agent SDK's SDKMessage): system/init, stream_event
// (with --include-partial-messages), assistant, user, result.
type message struct {
	Type            string          `json:"type"`
	Subtype         string          `json:"subtype"`
	SessionID       string          `json:"session_id"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	Event           json.RawMessage `json:"event"`
	Message         json.RawMessage `json:"message"`
	// Error is set on an assistant message Claude made up itself, e.g.
	// "authentication_failed" for "Not logged in · Please run /login".
	Error string `json:"error"`

	// system/init
	Model          string      `json:"model"`
	Tools          []string    `json:"tools"`
	MCPServers     []mcpStatus `json:"mcp_servers"`
	PermissionMode string      `json:"permissionMode"`
	Version        string      `json:"claude_code_version"`

	// result
	Result         *string         `json:"result"`
	IsError        bool            `json:"is_error"`
	TotalCostUSD   float64         `json:"total_cost_usd"`
	NumTurns       int64           `json:"num_turns"`
	DurationMS     int64           `json:"duration_ms"`
	Usage          json.RawMessage `json:"usage"`
	Errors         []string        `json:"errors"`
	TerminalReason string          `json:"terminal_reason"`
}

type mcpStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// MCPServer is one MCP server as Claude reported it in its last init event.
type MCPServer struct {
	Name   string   `json:"name"`
	Status string   `json:"status"`
	Tools  []string `json:"tools,omitempty"`
}

// servers joins init's server statuses with its tool list, where an MCP
// tool is named mcp__<server>__<tool>.
func (m *message) servers() []MCPServer {
	out := make([]MCPServer, 0, len(m.MCPServers))
	for _, s := range m.MCPServers {
		srv := MCPServer{Name: s.Name, Status: s.Status}
		prefix := "mcp__" + s.Name + "__"
		for _, t := range m.Tools {
			if name, ok := strings.CutPrefix(t, prefix); ok {
				srv.Tools = append(srv.Tools, name)
			}
		}
		out = append(out, srv)
	}
	return out
}

type apiMessage struct {
	ID      string         `json:"id"`
	Model   string         `json:"model"`
	Content []contentBlock `json:"content"`
}

// contentBlock is one block of an assistant or user message. A user
// message's content may also be a plain string, which fails to decode into
// []contentBlock and is then ignored (it is not a tool result).
type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type streamEvent struct {
	Type    string `json:"type"`
	Message struct {
		ID string `json:"id"`
	} `json:"message"`
	Delta struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	} `json:"delta"`
}

// turn follows one ask_claude call through its events.
type turn struct {
	req *node.CallRequest
	// streamed holds the ids of API messages whose text arrived as deltas,
	// so their complete assistant messages do not repeat it.
	streamed map[string]bool
	current  string // id of the API message being streamed
	text     strings.Builder
	// loggedOut is set when Claude answered "Not logged in".
	loggedOut bool
	result    *message
	init      *message
}

func newTurn(req *node.CallRequest) *turn {
	return &turn{req: req, streamed: map[string]bool{}}
}

func step(name string, v any) node.CallEvent {
	data, _ := json.Marshal(v)
	return node.CallEvent{Kind: node.EventStep, Step: name, Data: data}
}

// handle turns one event line into call events; it reports whether the
// line was the turn's result.
func (t *turn) handle(line []byte) bool {
	var m message
	if json.Unmarshal(line, &m) != nil {
		return false
	}
	sub := m.ParentToolUseID != nil && *m.ParentToolUseID != ""
	switch m.Type {
	case "system":
		switch m.Subtype {
		case "init":
			t.init = &m
			t.req.Emit(step("init", map[string]any{
				"session_id": m.SessionID, "model": m.Model, "mcp_servers": m.servers(),
				"permission_mode": m.PermissionMode, "claude_code_version": m.Version,
			}))
		case "permission_denied":
			t.req.Emit(node.CallEvent{Kind: node.EventLog, Level: "warning", Logger: "claude", Data: json.RawMessage(line)})
		}
	case "stream_event":
		var ev streamEvent
		if json.Unmarshal(m.Event, &ev) != nil || sub {
			return false
		}
		switch ev.Type {
		case "message_start":
			t.current = ev.Message.ID
		case "content_block_delta":
			if ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
				t.streamed[t.current] = true
				t.text.WriteString(ev.Delta.Text)
				t.req.Emit(node.CallEvent{Kind: node.EventText, Text: ev.Delta.Text})
			}
		}
	case "assistant":
		var am apiMessage
		if json.Unmarshal(m.Message, &am) != nil {
			return false
		}
		if m.Error == "authentication_failed" {
			t.loggedOut = true
		}
		for _, b := range am.Content {
			switch b.Type {
			case "text":
				if !sub && !t.streamed[am.ID] && b.Text != "" {
					t.text.WriteString(b.Text)
					t.req.Emit(node.CallEvent{Kind: node.EventText, Text: b.Text})
				}
			case "thinking":
				if b.Thinking != "" {
					t.req.Emit(step("thinking", map[string]any{"text": b.Thinking, "parent_tool_use_id": m.ParentToolUseID}))
				}
			case "tool_use":
				t.req.Emit(step("tool_use", map[string]any{"id": b.ID, "name": b.Name, "input": b.Input, "parent_tool_use_id": m.ParentToolUseID}))
			}
		}
	case "user":
		var um apiMessage
		if json.Unmarshal(m.Message, &um) != nil {
			return false
		}
		for _, b := range um.Content {
			if b.Type == "tool_result" {
				t.req.Emit(step("tool_result", map[string]any{"tool_use_id": b.ToolUseID, "content": b.Content, "is_error": b.IsError, "parent_tool_use_id": m.ParentToolUseID}))
			}
		}
	case "result":
		t.result = &m
		if m.Result != nil && isLoginError(*m.Result) {
			t.loggedOut = true
		}
		return true
	}
	return false
}

// isLoginError recognises Claude's answers when it has no credentials.
func isLoginError(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "not logged in") || strings.Contains(s, "please run /login") ||
		strings.Contains(s, "invalid api key")
}
