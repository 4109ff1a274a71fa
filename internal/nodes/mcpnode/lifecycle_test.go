package mcpnode

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

// TestStopEndsAHangingStart: Stop cancels a start in progress instead of
// waiting behind it (issue 22, item 8: Start held the node's lock across
// spawn and handshake, so Stop waited for the whole start timeout). The
// node ends STOPPED, not ERROR, and no process is left.
func TestStopEndsAHangingStart(t *testing.T) {
	ev := newEvents()
	cfg := faultConfig()
	cfg.startTimeout = time.Hour // the start never ends by itself
	n, err := newNode(stdioSpec("hang", badmcp(t, "--mode", "hang")), ev.env(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- n.Start(context.Background()) }()
	ev.waitState(t, node.Starting)
	testutil.WaitFor(t, 10*time.Second, func() bool { return serverPid(n) != 0 }, "the server to be spawned")
	pid := serverPid(n)

	stopped := make(chan error, 1)
	go func() { stopped <- n.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Stop: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Stop waits behind a start that hangs")
	}
	if err := <-started; !errors.Is(err, errStoppedDuringStart) {
		t.Errorf("Start = %v, want it ended by the stop", err)
	}
	if st := n.State(); st != node.Stopped {
		t.Errorf("after Stop the node is %s (%s), want STOPPED", st, n.Info().Error)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return !testutil.ProcessAlive(pid) }, "the hanging server to be ended")
}
