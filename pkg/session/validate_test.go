package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// A tool whose schema the library cannot resolve stays callable: the
// session checks the basic shape (required and unknown names of a closed
// schema, with did-you-mean) and logs why, once for the tool's listing.
func TestUnresolvableSchemaIsCheckedAndLoggedOnce(t *testing.T) {
	ctx := context.Background()
	core, logs := observer.New(zap.WarnLevel)
	fs := &fakes{configure: func(f *fakeNode) {
		f.tools = []*mcp.Tool{{Name: "up", InputSchema: json.RawMessage(`{"type": "object",
			"properties": {"file": {"$ref": "https://example.com/file.json"}},
			"required": ["file"], "additionalProperties": false}`)}}
	}}
	s := newSession(t, fs, &session.Options{Logger: zap.New(core)})
	add(t, s, "f", "fake")
	for _, tt := range []struct{ args, want string }{
		{`{"fiel": "x"}`, `@f up: invalid arguments: unknown argument "fiel" (did you mean "file"?); missing required argument "file"`},
		{`{}`, `missing required argument "file"`},
		{`{"file": "x"}`, ""},
		{`{"file": 3}`, ""}, // the type is behind the $ref: the server checks it
	} {
		_, err := s.Call(ctx, "f", &node.CallRequest{Tool: "up", Arguments: json.RawMessage(tt.args)})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Call(up %s) = %v, want it sent", tt.args, err)
		case tt.want != "" && (!errors.Is(err, node.ErrBadArgs) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Call(up %s) = %v, want ErrBadArgs saying %q", tt.args, err, tt.want)
		}
	}
	warned := logs.FilterField(zap.String("tool", "up")).All()
	if len(warned) != 1 {
		t.Fatalf("%d warnings about tool up's schema over 4 calls, want 1: %v", len(warned), warned)
	}
	if ctx := warned[0].ContextMap(); ctx["node"] != "f" || !strings.Contains(ctx["error"].(string), "example.com") {
		t.Errorf("the warning says %v; want the node and why", ctx)
	}
}
