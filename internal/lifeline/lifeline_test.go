//go:build linux

package lifeline

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// daemonHelper is the test binary run as a stand-in daemon: it starts
// processes, a lifeline for them, prints their pids and waits to be killed.
func TestMain(m *testing.M) {
	if mode := os.Getenv("LIFELINE_HELPER"); mode != "" {
		runHelper(mode)
		return
	}
	os.Exit(m.Run())
}

func runHelper(mode string) {
	marker := "NERVE_LIFELINE_TEST=" + strconv.Itoa(os.Getpid())
	// A "server" in its own session with a background child, and an
	// escapee that left the session but kept the environment.
	srv := exec.Command("/bin/sh", "-c", "sleep 300 & setsid sleep 301 & echo $! ; wait")
	srv.Env = append(os.Environ(), marker)
	srv.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		os.Exit(3)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	escapee := strings.TrimSpace(string(buf[:n]))
	t := Target{Session: srv.Process.Pid, Marker: marker}
	if mode == "group" {
		t = Target{Group: srv.Process.Pid}
	}
	l := Start(t)
	if l == nil {
		os.Exit(4)
	}
	os.Stdout.WriteString(strconv.Itoa(srv.Process.Pid) + " " + escapee + "\n")
	if mode == "release" {
		l.Release()
		os.Stdout.WriteString("released\n")
	}
	time.Sleep(time.Hour)
}

func startHelper(t *testing.T, mode string) (cmd *exec.Cmd, server, escapee int) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LIFELINE_HELPER="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(out)
	readers[cmd] = rd
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := readLine(t, cmd)
	f := strings.Fields(line)
	if len(f) < 2 {
		t.Fatalf("helper said %q", line)
	}
	server, _ = strconv.Atoi(f[0])
	escapee, _ = strconv.Atoi(f[1])
	t.Cleanup(func() {
		syscall.Kill(-server, syscall.SIGKILL)
		syscall.Kill(escapee, syscall.SIGKILL)
	})
	return cmd, server, escapee
}

// readers holds each helper's stdout reader (tests run one at a time).
var readers = map[*exec.Cmd]*bufio.Reader{}

func readLine(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	line, err := readers[cmd].ReadString('\n')
	if err != nil {
		t.Fatalf("reading the helper: %v", err)
	}
	return strings.TrimSpace(line)
}

func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// A zombie is dead; its parent has not reaped it yet.
	i := strings.LastIndexByte(string(data), ')')
	return i < 0 || !strings.HasPrefix(string(data[i+1:]), " Z")
}

func waitDead(t *testing.T, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) is still alive after the daemon died", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDaemonKilledEndsSessionAndMarkedProcesses(t *testing.T) {
	helper, server, escapee := startHelper(t, "session")
	if !alive(server) || !alive(escapee) {
		t.Fatal("the processes to watch did not start")
	}
	helper.Process.Signal(syscall.SIGKILL)
	helper.Wait()
	waitDead(t, "the server", server)
	waitDead(t, "the process that left the session", escapee)
}

func TestReleaseLeavesProcessesAlone(t *testing.T) {
	helper, server, _ := startHelper(t, "release")
	// startHelper read the pids; "released" follows once Release returned.
	if line := readLine(t, helper); line != "released" {
		t.Fatalf("helper said %q, want released", line)
	}
	helper.Process.Signal(syscall.SIGKILL)
	helper.Wait()
	time.Sleep(300 * time.Millisecond)
	if !alive(server) {
		t.Error("a released lifeline killed the server when the daemon died")
	}
}

func TestNilLifelineIsSafe(t *testing.T) {
	var l *Lifeline
	l.Release()
}
