package mcpnode

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

// TestServerOutlivesTheThreadThatStartedIt: Pdeathsig fires when the thread
// that forked the child exits. A node started from a goroutine whose
// thread then ends (a locked goroutine that exits) must keep its server.
func TestServerOutlivesTheThreadThatStartedIt(t *testing.T) {
	n, err := newNode(stdioSpec("t", badmcp(t, "--mode", "ok")), node.Env{}, faultConfig())
	if err != nil {
		t.Fatal(err)
	}
	testutil.OnExitingThread(t, func() { err = n.Start(context.Background()) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop(context.Background()) })
	pid := serverPid(n)
	res, err := n.CallTool(context.Background(), &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"text":"alive"}`)})
	if err != nil || text(t, res) != "alive" {
		t.Fatalf("after the starting thread exited: %v, %v (server %d alive: %v)", res, err, pid, testutil.ProcessAlive(pid))
	}
}
