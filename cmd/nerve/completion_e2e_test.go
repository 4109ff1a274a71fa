//go:build linux

package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/tmux"
)

// TestShellCompletion sources the generated script in a real bash, zsh and
// fish under tmux and presses Tab: `nerve call @f<Tab>` completes the node
// @fs and `nerve call @fs ec<Tab>` its tool. In bash '@' is a word break
// (COMP_WORDBREAKS), and the script offered nothing after it.
func TestShellCompletion(t *testing.T) {
	h := newHome(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	h.must("node", "add", "mcp", "fs", "--", server)
	// The scripts call `nerve`: put the binary on PATH under that name.
	bindir := t.TempDir()
	if err := os.Symlink(h.bin, filepath.Join(bindir, "nerve")); err != nil {
		t.Fatal(err)
	}
	env := []string{"NERVE_HOME=" + h.home, "PATH=" + bindir + ":" + os.Getenv("PATH"), "TERM=xterm", "HOME=" + t.TempDir()}
	for _, sh := range []struct {
		name  string
		argv  []string
		setup []string
	}{
		{"bash", []string{"bash", "--norc", "--noprofile"}, []string{"PS1='$ '", "source <(nerve completion bash)"}},
		{"zsh", []string{"zsh", "-f"}, []string{"PS1='$ '", "autoload -U compinit && compinit -u", "source <(nerve completion zsh)"}},
		{"fish", []string{"fish", "--no-config"}, []string{"function fish_prompt; echo '$ '; end", "nerve completion fish | source"}},
	} {
		t.Run(sh.name, func(t *testing.T) {
			if _, err := exec.LookPath(sh.name); err != nil {
				testutil.RequireE2E(t, sh.name+" (apt-get install "+sh.name+")", err)
			}
			term := tmux.Start(t, env, sh.argv...)
			for _, l := range sh.setup {
				term.Line(l)
			}
			term.Line("echo ready")
			term.WaitFor("ready\n", 20*time.Second)
			term.Type("nerve call @f")
			term.Keys("Tab")
			testutil.WaitFor(t, 20*time.Second, func() bool { return strings.Contains(term.LastLine(), "nerve call @fs") }, "nerve call @f<Tab> to complete @fs")
			term.Keys("C-u")
			term.Type("nerve call @fs ec")
			term.Keys("Tab")
			testutil.WaitFor(t, 20*time.Second, func() bool { return strings.Contains(term.LastLine(), "nerve call @fs echo") }, "nerve call @fs ec<Tab> to complete echo")
		})
	}
}
