//go:build linux

package cli

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/client"
)

// BenchmarkSSHRequest: one request (GET /v1/version) to a daemon through
// a real sshd on loopback, on a connection kept alive (what every command
// but a one-shot call does), on an ssh process of its own (a one-shot
// `nerve call`), the same with ssh's own connection sharing
// (ControlMaster, set in the user's ssh config), and on the daemon's
// socket for comparison. docs/performance.md, *A daemon through ssh*.
func BenchmarkSSHRequest(b *testing.B) {
	h := startSSHHost(b, testutil.BuildBinary(b, "./cmd/nerve"))
	target, err := client.ParseSSH("ssh://nerve-remote")
	if err != nil {
		b.Fatal(err)
	}
	target.Command = strings.Fields(h.SSHCommand)
	shared := *target
	shared.Command = append(strings.Fields(h.SSHCommand), "-o", "ControlMaster=auto",
		"-o", "ControlPath="+filepath.Join(h.dir, "cm-%C"), "-o", "ControlPersist=60")
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		opts client.Options
	}{
		{"kept alive", client.Options{Dial: target.Dial}},
		{"ssh per request", client.Options{Dial: target.Dial, OneShot: true}},
		{"ssh per request, ControlMaster", client.Options{Dial: shared.Dial, OneShot: true}},
		{"unix socket", client.Options{Socket: h.Remote.Socket}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := client.New(bc.opts)
			defer c.Close()
			if _, err := c.Version(ctx); err != nil { // starts the daemon there
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := c.Version(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The ControlMaster left running by ControlPersist.
	exit := append(shared.Command, "-O", "exit", "nerve-remote")
	_ = exec.Command(exit[0], exit[1:]...).Run()
}
