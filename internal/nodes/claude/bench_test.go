package claude

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

// BenchmarkAsk measures one ask_claude round trip through the node against
// the fake claude: writing the message, reading and translating about ten
// stream-json events, and saving the state. Claude's own time is not in it.
func BenchmarkAsk(b *testing.B) {
	r := newRigB(b)
	args := json.RawMessage(`{"message": "hello"}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := r.CallTool(ctx, &node.CallRequest{Tool: ToolName, Arguments: args, Observe: func(node.CallEvent) {}})
		if err != nil || res.IsError {
			b.Fatalf("ask: %v %v", err, res)
		}
	}
}

func newRigB(b *testing.B) *Node {
	b.Helper()
	fake := testutil.BuildBinary(b, "./fixtures/fakeclaude")
	n, err := New(node.Spec{ID: "cc", Kind: Kind, Command: []string{fake},
		Env: map[string]string{"FAKECLAUDE_HOME": b.TempDir()}}, node.Env{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { n.Stop(context.Background()) })
	return n.(*Node)
}
