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
	cfg.startTimeout = time.Minute
	n, err := newNode(stdioSpec("hang", badmcp(t, "--mode", "hang")), ev.env(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- n.Start(context.Background()) }()
	ev.waitState(t, node.Starting)
	testutil.WaitFor(t, 10*time.Second, func() bool { return serverPid(n) != 0 }, "the server to be spawned")
	pid := serverPid(n)

	t0 := time.Now()
	if err := n.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	took := time.Since(t0)
	if err := <-started; !errors.Is(err, errStoppedDuringStart) {
		t.Errorf("Start = %v, want it ended by the stop", err)
	}
	if took > 10*time.Second {
		t.Errorf("Stop took %v behind a hanging start", took)
	}
	if st := n.State(); st != node.Stopped {
		t.Errorf("after Stop the node is %s (%s), want STOPPED", st, n.Info().Error)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return !testutil.ProcessAlive(pid) }, "the hanging server to be ended")
}
