package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/node"
)

// helperEnv makes the test binary act as a daemon holding one claude node.
const helperEnv = "NERVE_CLAUDE_TEST_DAEMON"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runDaemonHelper()
		return
	}
	os.Exit(m.Run())
}

// runDaemonHelper starts a claude node on the fake with an MCP config in
// the folder it is given, prints "ready CONFIG PID" and waits to be killed.
func runDaemonHelper() {
	var a struct{ Fake, Dir, Home string }
	json.Unmarshal([]byte(os.Getenv(helperEnv)), &a)
	opts, _ := json.Marshal(Options{MCPConfig: `{"mcpServers": {"a": {"command": "a"}}}`})
	n, err := New(node.Spec{ID: "cc", Kind: Kind, Command: []string{a.Fake}, Options: opts,
		Env: map[string]string{"FAKECLAUDE_HOME": a.Home}}, node.Env{Dir: a.Dir})
	if err == nil {
		err = n.Start(context.Background())
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	d := n.Info().Details
	fmt.Println("ready", d["mcp_config_file"], d["pid"])
	testutil.Hang()
}

func TestKilledDaemonLeavesNoClaudeAndCleanupRemovesItsConfig(t *testing.T) {
	fake := testutil.BuildBinary(t, "./fixtures/fakeclaude")
	sessions := t.TempDir()
	dir := filepath.Join(sessions, "default", "nodes", "cc")
	arg, _ := json.Marshal(map[string]string{"Fake": fake, "Dir": dir, "Home": t.TempDir()})
	cmd, line, _ := testutil.StartHelper(t, helperEnv+"="+string(arg))
	var cfg string
	var pid int
	if _, err := fmt.Sscanf(line, "ready %s %d", &cfg, &pid); err != nil {
		t.Fatalf("daemon helper said %q: %v", line, err)
	}
	if st, err := os.Stat(cfg); err != nil || st.Mode().Perm() != 0o600 || !strings.HasPrefix(cfg, dir) {
		t.Fatalf("config %s: %v %v; want a 0600 file in %s", cfg, st, err, dir)
	}

	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	testutil.WaitFor(t, 10*time.Second, func() bool { return !testutil.ProcessAlive(pid) }, "claude to die with its daemon")
	if _, err := os.Stat(cfg); err != nil {
		t.Fatalf("expected the killed daemon to leave %s behind (the case CleanupStale is for): %v", cfg, err)
	}

	// The daemon's next start.
	if err := CleanupStale(sessions); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cfg); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("left-over %s survived CleanupStale", cfg)
	}
}
