//go:build linux

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/paths"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/internal/testutil/tmux"
	"github.com/nerve-dev/nerve/pkg/client"
)

// sshHost is a real sshd (Debian's openssh-server) on a loopback port,
// logging in the current user with a throwaway key: "another machine"
// for nerve -H ssh://. Its sessions get the environment a real host would
// give a nerve user, set by the server (SetEnv): nerve on the PATH and a
// state folder of their own (NERVE_HOME), apart from the local daemon's.
type sshHost struct {
	// Remote is the state folder of the daemon "there".
	Remote paths.Paths
	// SSHCommand is NERVE_SSH_COMMAND: ssh with a config naming the hosts
	// nerve-remote (the sshd) and nerve-nowhere (a closed port).
	SSHCommand string
	bin        string
	dir        string
}

func startSSHHost(t testing.TB, nerveBin string) *sshHost {
	t.Helper()
	sshd := "/usr/sbin/sshd"
	if p, err := exec.LookPath("sshd"); err == nil {
		sshd = p
	}
	for _, prog := range []string{sshd, "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(prog); err != nil {
			testutil.RequireE2E(t, "OpenSSH (apt-get install openssh-server openssh-client)", err)
		}
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// sshd started as root wants its privilege separation folder,
		// which Debian makes at boot (systemd-tmpfiles).
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := testutil.SocketDir(t) // short: the remote socket lives under it
	h := &sshHost{bin: nerveBin, dir: dir}
	for _, key := range []string{"host_key", "id"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "nerve-test", "-f", filepath.Join(dir, key)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "id.pub"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("authorized_keys", string(pub))
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(nerveBin, filepath.Join(bin, "nerve")); err != nil {
		t.Fatal(err)
	}
	remoteHome := filepath.Join(dir, "r")
	h.Remote = paths.Under(remoteHome, filepath.Join(remoteHome, "run"))
	t.Cleanup(func() {
		// The daemon "there" outlives its ssh sessions, as on a real host.
		stop := exec.Command(nerveBin, "daemon", "stop")
		stop.Env = append(os.Environ(), "NERVE_HOME="+remoteHome, "NERVE_HOST=")
		_ = stop.Run()
	})

	port := startSSHD(t, sshd, write, dir, bin, remoteHome)
	closed := freePort(t) // nothing listens there
	cfg := write("ssh_config", fmt.Sprintf(`Host nerve-remote nerve-nowhere
  HostName 127.0.0.1
  User %s
  IdentityFile %s
  IdentitiesOnly yes
  UserKnownHostsFile %s
  StrictHostKeyChecking accept-new
  BatchMode yes
  LogLevel ERROR
Host nerve-remote
  Port %d
Host nerve-nowhere
  Port %d
`, me.Username, filepath.Join(dir, "id"), filepath.Join(dir, "known_hosts"), port, closed))
	h.SSHCommand = "ssh -F " + cfg
	return h
}

// startSSHD runs sshd in the foreground on a free loopback port and
// returns the port once it listens; it is stopped when the test ends.
func startSSHD(t testing.TB, sshd string, write func(name, text string) string, dir, bin, remoteHome string) int {
	t.Helper()
	var last string
	for range 3 { // a free port may be taken before sshd binds it
		port := freePort(t)
		conf := write("sshd_config", fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PidFile %s
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
SetEnv PATH=%s:/usr/local/bin:/usr/bin:/bin NERVE_HOME=%s
`, port, filepath.Join(dir, "host_key"), filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid"), bin, remoteHome))
		cmd := exec.Command(sshd, "-f", conf, "-D", "-e")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting sshd: %v", err)
		}
		listening := make(chan bool, 1)
		var log strings.Builder
		go func() {
			sc := bufio.NewScanner(stderr)
			ok := false
			for sc.Scan() {
				log.WriteString(sc.Text() + "\n")
				if !ok && strings.Contains(sc.Text(), "Server listening on") {
					ok = true
					listening <- true
				}
			}
			if !ok {
				listening <- false
			}
		}()
		select {
		case ok := <-listening:
			if ok {
				t.Cleanup(func() {
					_ = cmd.Process.Signal(syscall.SIGTERM)
					_ = cmd.Wait()
				})
				return port
			}
			_ = cmd.Wait()
			last = log.String()
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("sshd did not listen within 20 s:\n%s", log.String())
		}
	}
	t.Fatalf("sshd would not start:\n%s", last)
	return 0
}

// TestSSHRemote is issue 32's test of a daemon on another machine: a node
// added, called and listed through `nerve mcp serve` with the MCP
// Inspector, all through -H ssh:// to a second daemon with its own state
// (the local one knows nothing of it); the ssh connection killed mid-call
// (a clear error, then a working next command); the Commander against the
// remote; contexts, NERVE_HOST over the context and -H over both; and the
// errors of ssh itself.
func TestSSHRemote(t *testing.T) {
	n := newRealNerve(t)
	fixture := testutil.BuildBinary(t, "./fixtures/mcpserver")
	h := startSSHHost(t, n.bin)
	base := append(os.Environ(), "NERVE_SSH_COMMAND="+h.SSHCommand, "NERVE_HOST=", "NERVE_REMOTE_COMMAND=")
	n.Env = base
	const remote = "ssh://nerve-remote"

	// Add a node there and call it.
	out := n.Must("-H", remote, "node", "add", "mcp", "fx", "--", fixture)
	if !strings.Contains(out, "mcp fx is READY") {
		t.Errorf("node add through ssh: %q", out)
	}
	if out := n.Must("-H", remote, "call", "@fx", "echo", "text=over ssh"); strings.TrimSpace(out) != "over ssh" {
		t.Errorf("call through ssh printed %q", out)
	}
	// The daemon there has it in its own state folder; this machine's
	// daemon knows nothing of it.
	if data, err := os.ReadFile(filepath.Join(h.Remote.Sessions, "default.json")); err != nil || !strings.Contains(string(data), fixture) {
		t.Errorf("the remote state folder has no fx: %v\n%s", err, data)
	}
	if out := n.Must("node", "ls"); strings.Contains(out, "fx") {
		t.Errorf("the local daemon lists the remote node:\n%s", out)
	}
	if out := n.Must("-H", remote, "daemon", "status"); !strings.Contains(out, "daemon on nerve-remote running") || !strings.Contains(out, h.Remote.Socket) {
		t.Errorf("daemon status through ssh:\n%s", out)
	}

	t.Run("environment stays here", func(t *testing.T) {
		// A node restarted through ssh gets no variable of this machine
		// (docs/remote.md); locally the same restart hands it over.
		n.Env = append(slices.Clone(base), "NERVE_TEST_LOCAL_ONLY=leaked")
		defer func() { n.Env = base }()
		for _, tc := range []struct {
			host string
			want string
		}{{remote, ""}, {"", "leaked"}} {
			var h []string
			if tc.host != "" {
				h = []string{"-H", tc.host}
			}
			n.Must(append(h, "node", "restart", "bash")...)
			out, errs, _ := n.Run(append(h, "call", "@bash", "printenv", "NERVE_TEST_LOCAL_ONLY")...)
			if strings.TrimSpace(out) != tc.want {
				t.Errorf("-H %q: the bash node's NERVE_TEST_LOCAL_ONLY = %q (%s), want %q", tc.host, out, errs, tc.want)
			}
		}
	})

	t.Run("inspector", func(t *testing.T) {
		// NERVE_HOST, as an MCP client's config would set it.
		serve := []string{n.bin, "mcp", "serve", "-e", "NERVE_HOME=" + n.home, "-e", "NERVE_HOST=" + remote, "-e", "NERVE_SSH_COMMAND=" + h.SSHCommand}
		var list struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		if err := json.Unmarshal([]byte(jsonPart(inspect(t, append(serve, "--method", "tools/list")...))), &list); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(list.Tools, func(tl struct{ Name string }) bool { return tl.Name == "fx.echo" }) {
			t.Errorf("tools/list through ssh = %+v, want fx.echo among them", list.Tools)
		}
		res := inspect(t, append(serve, "--method", "tools/call", "--tool-name", "fx.echo", "--tool-arg", "text=inspected")...)
		if !strings.Contains(res, `"text": "inspected"`) {
			t.Errorf("tools/call through ssh:\n%s", res)
		}
	})

	t.Run("lost mid-call", func(t *testing.T) {
		// Watch the daemon there directly (it is on this machine) for the
		// call to be under way.
		rc := client.New(client.Options{Socket: h.Remote.Socket})
		defer rc.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		w, err := rc.Session("default").Subscribe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		call := n.Command("-H", remote, "call", "@fx", "slow", "ms=60000", "steps=600")
		var stderr strings.Builder
		call.Stderr = &stderr
		if err := call.Start(); err != nil {
			t.Fatal(err)
		}
		for {
			ev, err := w.Next(ctx)
			if err != nil {
				t.Fatalf("waiting for the call to start there: %v", err)
			}
			if ev.Kind == "state" && ev.Node == "fx" && ev.To == "BUSY" {
				break
			}
		}
		sshPIDs := testutil.ChildrenOf(call.Process.Pid)
		if len(sshPIDs) != 1 {
			t.Fatalf("the call's processes: %v; want its one ssh", sshPIDs)
		}
		if err := syscall.Kill(sshPIDs[0], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err = call.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != ExitFailed {
			t.Errorf("the call whose ssh was killed: %v; want exit %d", err, ExitFailed)
		}
		want := "nerve: the connection to nerve-remote through ssh was lost: ssh ended: signal: killed; the next command reconnects\n"
		if stderr.String() != want {
			t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), want)
		}
		// The daemon there saw its client go and cancelled the call.
		for {
			ev, err := w.Next(ctx)
			if err != nil {
				t.Fatalf("waiting for the call to end there: %v", err)
			}
			if ev.Kind == "state" && ev.Node == "fx" && ev.To == "READY" {
				break
			}
		}
		if out := n.Must("-H", remote, "call", "@fx", "echo", "text=again"); strings.TrimSpace(out) != "again" {
			t.Errorf("the next command printed %q", out)
		}
	})

	t.Run("commander", func(t *testing.T) {
		term := tmux.Start(t, []string{"NERVE_HOME=" + n.home, "NERVE_SESSION=", "XDG_RUNTIME_DIR=", "NO_COLOR=1", "TERM=xterm",
			"NERVE_SSH_COMMAND=" + h.SSHCommand, "NERVE_HOST="}, n.bin, "-H", remote)
		term.WaitFor("default>", time.Minute)
		term.Line("@fx echo text=typed-there")
		s := term.WaitForAfter("@fx echo text=typed-there", "default>", time.Minute)
		if !strings.Contains(s, "\ntyped-there\n") {
			t.Errorf("the Commander's answer through ssh:\n%s", s)
		}
		term.Keys("C-d")
	})

	t.Run("contexts", func(t *testing.T) {
		n.Must("context", "create", "box", "--host", remote)
		n.Must("context", "create", "nowhere", "--host", "ssh://nerve-nowhere")
		n.Must("context", "use", "box")
		if out := n.Must("context", "ls"); !strings.Contains(out, "box *") {
			t.Errorf("context ls after use:\n%s", out)
		}
		if out := n.Must("node", "ls"); !strings.Contains(out, "fx") {
			t.Errorf("node ls in context box does not list the remote node:\n%s", out)
		}
		// NERVE_HOST overrides the context: nerve-nowhere does not answer.
		n.Env = append(base, "NERVE_HOST=ssh://nerve-nowhere")
		_, errs, code := n.Run("node", "ls")
		if code != ExitFailed || !strings.Contains(errs, "ssh to nerve-nowhere failed") || !strings.Contains(errs, "Connection refused") {
			t.Errorf("NERVE_HOST over the context: exit %d, %s", code, errs)
		}
		// -H overrides both.
		if out := n.Must("-H", remote, "node", "ls"); !strings.Contains(out, "fx") {
			t.Errorf("-H over NERVE_HOST:\n%s", out)
		}
		n.Env = base
		n.Must("context", "use", "default")
		if out := n.Must("node", "ls"); strings.Contains(out, "fx") {
			t.Errorf("context default lists the remote node:\n%s", out)
		}
	})

	t.Run("daemon stop", func(t *testing.T) {
		if out := n.Must("-H", remote, "daemon", "stop"); !strings.HasPrefix(out, "daemon on nerve-remote stopped (pid ") {
			t.Errorf("daemon stop through ssh: %q", out)
		}
		// Asking whether it runs does not start it (dial-stdio --no-start).
		testutil.WaitFor(t, 10*time.Second, func() bool {
			_, errs, code := n.Run("-H", remote, "daemon", "status")
			return code == ExitFailed && strings.Contains(errs, "nerve on nerve-remote could not reach its daemon: no daemon is running")
		}, "daemon status through ssh to say no daemon runs there")
		if out := n.Must("-H", remote, "daemon", "start"); !strings.HasPrefix(out, "daemon on nerve-remote running (pid ") {
			t.Errorf("daemon start through ssh: %q", out)
		}
		if _, errs, code := n.Run("-H", remote, "daemon", "start", "--foreground"); code != ExitUsage || !strings.Contains(errs, "on nerve-remote itself") {
			t.Errorf("daemon start --foreground through ssh: exit %d, %s", code, errs)
		}
		n.Must("-H", remote, "daemon", "stop")
		// Any other command starts it again, with its node.
		if out := n.Must("-H", remote, "call", "@fx", "echo", "text=back"); strings.TrimSpace(out) != "back" {
			t.Errorf("a call after daemon stop printed %q", out)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			env  []string
			want string
		}{
			{"no nerve there", []string{"NERVE_REMOTE_COMMAND=nerve-not-installed"},
				"nerve is not installed on nerve-remote or not on the PATH of a non-interactive ssh session"},
			{"unknown host key", []string{"NERVE_SSH_COMMAND=" + h.SSHCommand + " -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes"},
				"ssh to nerve-remote failed: Host key verification failed: check the host's key and accept it by running"},
			{"no key", []string{"NERVE_SSH_COMMAND=" + h.SSHCommand + " -o IdentityFile=/dev/null -o IdentityAgent=none -o PubkeyAuthentication=no"},
				"Permission denied (publickey): nerve's ssh cannot ask for a password or a passphrase"},
		} {
			n.Env = append(slices.Clone(base), tc.env...)
			_, errs, code := n.Run("-H", remote, "node", "ls")
			if code != ExitFailed || !strings.Contains(errs, tc.want) {
				t.Errorf("%s: exit %d, stderr %q; want exit %d saying %q", tc.name, code, errs, ExitFailed, tc.want)
			}
		}
		n.Env = base
	})
}

// inspect runs the MCP Inspector in CLI mode with args.
func inspect(t *testing.T, args ...string) string {
	t.Helper()
	argv := append(npmfix.Inspector(t), args...)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			out = append(out, ee.Stderr...)
		}
		t.Fatalf("inspector %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// jsonPart drops what the Inspector prints before its JSON.
func jsonPart(s string) string {
	if i := strings.Index(s, "{"); i >= 0 {
		return s[i:]
	}
	return s
}
