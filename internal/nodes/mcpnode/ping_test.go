package mcpnode

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

// TestHungServerFound: a stdio server that stops answering but keeps
// running (badmcp hang-after-call, deaf to SIGTERM and to the end of its
// stdin) is found by the idle ping: the node goes ERROR saying so, the
// process group is ended, and with restart on-failure the node comes back
// READY with a new server that answers calls.
func TestHungServerFound(t *testing.T) {
	cfg := faultConfig()
	cfg.pingInterval = 100 * time.Millisecond
	cfg.pingTimeout = 300 * time.Millisecond
	cfg.restartBase = 50 * time.Millisecond
	s := faultSession(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec := stdioSpec("hung", badmcp(t, "--mode", "hang-after-call", "--ignore-term"))
	spec.Options = json.RawMessage(`{"transport":"stdio","restart":"on-failure"}`)
	n, err := s.Add(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	first := serverPid(n)
	sub := s.Subscribe(64)
	defer sub.Close()
	if got, err := echo(ctx, s, "hung", "last answer"); err != nil || got != "last answer" {
		t.Fatalf("echo before the hang: %q, %v", got, err)
	}
	// Wait for the ERROR event (the restart may already be under way when
	// we look at the state).
	reason := ""
	for reason == "" {
		select {
		case ev := <-sub.C:
			if ev.Kind == "state" && ev.To == node.Error.String() {
				reason = ev.Reason
			}
		case <-ctx.Done():
			t.Fatal("the hung server was not found")
		}
	}
	wantAll(t, "ERROR reason", reason, []string{"the server stopped answering: no reply to ping within 300ms while idle", "badmcp: hang-after-call: answering nothing from now on"})
	testutil.WaitFor(t, 10*time.Second, func() bool { return !testutil.ProcessGroupAlive(first) }, "the hung server's group to be gone")
	testutil.WaitFor(t, 10*time.Second, func() bool { return n.State() == node.Ready && serverPid(n) != first }, "restart on-failure to bring the node back")
	if got, err := echo(ctx, s, "hung", "back"); err != nil || got != "back" {
		t.Errorf("echo after the restart: %q, %v", got, err)
	}
}

// TestPingOffForServersWithoutPing: a server that answers ping "method not
// found" is not pinged again and stays READY; option ping "off" sends no
// ping at all.
func TestPingOffForServersWithoutPing(t *testing.T) {
	cfg := faultConfig()
	cfg.pingInterval = 50 * time.Millisecond
	cfg.pingTimeout = 300 * time.Millisecond
	s := faultSession(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := s.Add(ctx, stdioSpec("noping", badmcp(t, "--no-ping")))
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool {
		return n.Info().Details["ping"] == "off (the server does not answer ping)"
	}, "the node to stop pinging a server without ping")
	if got, err := echo(ctx, s, "noping", "fine"); err != nil || got != "fine" || n.State() != node.Ready {
		t.Errorf("echo: %q, %v, state %s", got, err, n.State())
	}
	pings := strings.Count(strings.Join(n.(*Node).StderrTail(), "\n"), "badmcp: ping ")
	if pings != 1 {
		t.Errorf("the server was pinged %d times, want once", pings)
	}

	if _, err := pingInterval("soon"); err == nil || !strings.Contains(err.Error(), "or off") {
		t.Errorf("ping soon: %v", err)
	}
	spec := stdioSpec("off", badmcp(t))
	spec.Options = json.RawMessage(`{"transport":"stdio","ping":"off"}`)
	off, err := newNode(spec, node.Env{}, faultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got := off.Info().Details["ping"]; got != "off" {
		t.Errorf("ping with option off: %v", got)
	}
}
