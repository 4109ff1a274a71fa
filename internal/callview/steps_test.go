package callview

import "testing"

// TestStepsLine: an agent's step events, of an llm node and of a claude
// node, read as a person reads them (issue 27 item 6).
func TestStepsLine(t *testing.T) {
	var v Steps
	for _, c := range []struct{ step, data, want string }{
		{"tool_call", `{"step":1,"id":"c1","name":"fs__read","tool":"fs.read","arguments":{"path":"/tmp/a b","n":3}}`, `→ fs.read n=3 path="/tmp/a b"`},
		{"tool_result", `{"step":1,"id":"c1","tool":"fs.read","is_error":false,"text":"hello\nworld"}`, "← fs.read: hello"},
		{"tool_result", `{"step":1,"id":"c2","tool":"fs.read","is_error":true,"text":"no such file"}`, "✗ fs.read: no such file"},
		{"usage", `{"step":1,"prompt_tokens":1234,"completion_tokens":56,"total_tokens":1290,"model":"gpt-4o-mini"}`, "· 1,234 in, 56 out tokens (gpt-4o-mini)"},
		{"thinking", `{"step":1,"text":"let me look\nmore"}`, "… let me look"},
		{"context", `{"budget":8000,"estimated_tokens":9100,"dropped_tool_results":2,"dropped_messages":0,"estimated_tokens_after":7000}`, "· context ~9,100 tokens, over its budget of 8,000: 2 old tool results and 0 messages left out, ~7,000 now"},
		// claude: the result names its call only by id.
		{"tool_use", `{"id":"toolu_1","name":"Bash","input":{"command":"ls"},"parent_tool_use_id":null}`, "→ Bash command=ls"},
		{"tool_result", `{"tool_use_id":"toolu_1","content":[{"type":"text","text":"a.txt"}],"is_error":false}`, "← Bash: a.txt"},
		{"usage", `{"input_tokens":10,"output_tokens":2}`, "· 10 in, 2 out tokens"},
		{"cost", `{"turn_cost_usd":0.0123,"total_cost_usd":0.05,"duration_ms":3200,"num_turns":1}`, "· $0.0123 this turn ($0.0500 in all), 3.2s"},
		{"init", `{"session_id":"s"}`, ""},
	} {
		if got := v.Line(c.step, []byte(c.data)); got != c.want {
			t.Errorf("Line(%s, %s) = %q, want %q", c.step, c.data, got, c.want)
		}
	}
}
