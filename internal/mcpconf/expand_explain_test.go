package mcpconf

import (
	"errors"
	"strings"
	"testing"
)

// The hint reaches the message even when the UnsetError is wrapped (issue
// 22: an mcp node's missing ${VAR} lacked the `nerve env set` hint that a
// bash node gave).
func TestExplainRewritesWrappedMessage(t *testing.T) {
	s := Server{Name: "m1", Transport: "stdio", Command: []string{"echo"}, Env: map[string]string{"TOK": "${NOPE_X}"}}
	_, err := s.Expand(func(string) (string, bool) { return "", false }, "")
	err = Explain(err, "the client's environment and nerve's env file")
	var ue *UnsetError
	if !errors.As(err, &ue) {
		t.Fatalf("%v does not wrap an UnsetError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `server "m1": ${NOPE_X} is not set in the client's environment and nerve's env file; set it with `+"`nerve env set NOPE_X=…`") {
		t.Errorf("message: %s", msg)
	}
}
