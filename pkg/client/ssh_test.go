package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/pkg/client"
)

// TestMain lets this test binary act as ssh for the "ssh" modes: run as
// `TEST -test.run=^$ fake-ssh SOCKET …` it relays its stdin and stdout to
// the daemon's socket, as ssh running `nerve daemon dial-stdio` does.
func TestMain(m *testing.M) {
	if i := slices.Index(os.Args, "fake-ssh"); i > 0 && i+1 < len(os.Args) {
		fakeSSHMain(os.Args[i+1])
		return
	}
	os.Exit(m.Run())
}

func fakeSSHMain(sock string) {
	conn, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake ssh:", err)
		os.Exit(255)
	}
	go func() {
		_, _ = io.Copy(conn, os.Stdin)
		_ = conn.(*net.UnixConn).CloseWrite()
	}()
	_, _ = io.Copy(os.Stdout, conn)
	os.Exit(0)
}

// fakeSSH reaches the daemon on sock through this test binary as ssh.
func fakeSSH(t *testing.T, sock string) *client.SSH {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &client.SSH{Host: "fake", Command: []string{exe, "-test.run=^$", "fake-ssh", sock}}
}

func TestParseSSH(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want client.SSH
		err  string
	}{
		{in: "ssh://build", want: client.SSH{Host: "build"}},
		{in: "ssh://me@build.example.com:2222", want: client.SSH{User: "me", Host: "build.example.com", Port: "2222"}},
		{in: "ssh://me@[::1]:22/", want: client.SSH{User: "me", Host: "::1", Port: "22"}},
		{in: "build", err: "write ssh://build"},
		{in: "me@build:22", err: "write ssh://me@build:22"},
		{in: "tcp://build:80", err: "through ssh only"},
		{in: "ssh://me:secret@build", err: "password"},
		{in: "ssh://build/var/run/nerve.sock", err: "a path is not used"},
		{in: "ssh://build?x=1", err: "query"},
		{in: "ssh://", err: "names no host"},
		{in: "ssh://-oProxyCommand=x", err: "may not start with '-'"},
	} {
		got, err := client.ParseSSH(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSSH(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSSH(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("ParseSSH(%q) = %+v, want %+v", tc.in, *got, tc.want)
		}
		if back, err := client.ParseSSH(got.String()); err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("ParseSSH(%q).String() = %q does not read back: %v, %v", tc.in, got.String(), back, err)
		}
	}
}

func TestSSHArgs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ssh   client.SSH
		start bool
		want  []string
	}{
		{"default", client.SSH{Host: "build"}, true,
			[]string{"ssh", "-o", "ConnectTimeout=30", "-T", "--", "build", "nerve daemon dial-stdio"}},
		{"user and port, no start", client.SSH{User: "me", Host: "build", Port: "2222"}, false,
			[]string{"ssh", "-o", "ConnectTimeout=30", "-T", "-l", "me", "-p", "2222", "--", "build", "nerve daemon dial-stdio --no-start"}},
		{"NERVE_SSH_COMMAND sets the timeout and -T", client.SSH{Host: "build", Command: []string{"ssh", "-F", "/x/cfg", "-oConnectTimeout=5", "-T"}}, true,
			[]string{"ssh", "-F", "/x/cfg", "-oConnectTimeout=5", "-T", "--", "build", "nerve daemon dial-stdio"}},
		{"NERVE_REMOTE_COMMAND", client.SSH{Host: "build", Remote: "~/go/bin/nerve"}, true,
			[]string{"ssh", "-o", "ConnectTimeout=30", "-T", "--", "build", "~/go/bin/nerve daemon dial-stdio"}},
	} {
		if got := tc.ssh.Args(tc.start); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Args = %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestSSHErrors: what ssh, or the remote side, printed and exited with
// becomes a message that says what failed and what to do, and every such
// error is ErrDaemonUnavailable. The "ssh" here is sh playing each part.
func TestSSHErrors(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("sh plays ssh")
	}
	// It reads the request line first, as ssh reads all it is sent.
	const headers = `read line; printf 'HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n'; `
	for _, tc := range []struct {
		name   string
		script string
		call   bool // make a call, not a Version request
		want   []string
		lost   bool
	}{
		{name: "auth", script: `echo 'me@build: Permission denied (publickey).' >&2; exit 255`,
			want: []string{"ssh to build failed: me@build: Permission denied (publickey): ", "ssh-agent", "-o BatchMode=yes build true"}},
		{name: "host key", script: `echo 'Host key verification failed.' >&2; exit 255`,
			want: []string{"ssh to build failed: Host key verification failed: check the host's key and accept it"}},
		{name: "unreachable", script: `echo 'ssh: connect to host build port 22: Connection refused' >&2; exit 255`,
			want: []string{"Connection refused: check that `sh -c", "works in a terminal"}},
		{name: "no nerve there", script: `echo 'bash: line 1: nerve: command not found' >&2; exit 127`,
			want: []string{"nerve is not installed on build or not on the PATH of a non-interactive ssh session (bash: line 1: nerve: command not found): install it there, or set NERVE_REMOTE_COMMAND"}},
		{name: "an old nerve there", script: "echo 'nerve: unknown command \"dial-stdio\" for `nerve daemon`' >&2; exit 2",
			want: []string{"nerve on build is too old"}},
		{name: "its daemon failed", script: `echo 'nerve: the daemon exited as it started; see the log' >&2; exit 1`,
			want: []string{"nerve on build could not reach its daemon: the daemon exited as it started"}},
		{name: "killed before an answer", script: `kill -KILL $$`, lost: true,
			want: []string{"the connection to build through ssh was lost: ssh ended: signal: killed; the next command reconnects"}},
		{name: "lost mid-answer", call: true, lost: true,
			script: headers + `echo 'Connection to build closed by remote host.' >&2; exit 255`,
			want:   []string{"the connection to build through ssh was lost: Connection to build closed by remote host; the next command reconnects"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, oneShot := range []bool{false, true} {
				ssh := &client.SSH{Host: "build", Command: []string{"sh", "-c", tc.script, "ssh"}}
				c := client.New(client.Options{Dial: ssh.Dial, OneShot: oneShot, Revive: func(context.Context) error {
					t.Error("Revive called for an ssh failure")
					return nil
				}})
				var err error
				if tc.call {
					_, err = c.Session("default").Call(context.Background(), "n", "t", nil, nil)
				} else {
					_, err = c.Version(context.Background())
				}
				c.Close()
				var se *client.SSHError
				if !errors.As(err, &se) || !errors.Is(err, client.ErrDaemonUnavailable) {
					t.Fatalf("one-shot=%v: %v; want an *SSHError that is ErrDaemonUnavailable", oneShot, err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("one-shot=%v: %q\nwant it to say %q", oneShot, err, w)
					}
				}
				if se.Lost != tc.lost {
					t.Errorf("one-shot=%v: Lost = %v, want %v", oneShot, se.Lost, tc.lost)
				}
			}
		})
	}
}

// TestSSHNoSSH: an ssh that cannot run says so and how to fix it.
func TestSSHNoSSH(t *testing.T) {
	ssh := &client.SSH{Host: "build", Command: []string{"/nonexistent/ssh"}}
	_, err := client.New(client.Options{Dial: ssh.Dial}).Version(context.Background())
	if !errors.Is(err, client.ErrDaemonUnavailable) || !strings.Contains(err.Error(), "cannot run ssh to reach build (/nonexistent/ssh)") || !strings.Contains(err.Error(), "NERVE_SSH_COMMAND") {
		t.Fatalf("%v; want ErrDaemonUnavailable naming the program and NERVE_SSH_COMMAND", err)
	}
}

// TestSSHNoStartInTheBackground: a request whose context says no to
// Revive (what the REPL watches with) asks the host not to start its
// daemon.
func TestSSHNoStartInTheBackground(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("sh plays ssh")
	}
	ssh := &client.SSH{Host: "build", Command: []string{"sh", "-c", `echo "remote: $*" >&2; exit 1`, "ssh"}}
	c := client.New(client.Options{Dial: ssh.Dial})
	defer c.Close()
	for _, tc := range []struct {
		ctx  context.Context
		want bool
	}{
		{context.Background(), false},
		{client.WithRevive(context.Background(), false), true},
	} {
		_, err := c.Version(tc.ctx)
		var se *client.SSHError
		if !errors.As(err, &se) {
			t.Fatalf("%v; want an *SSHError", err)
		}
		if got := strings.HasSuffix(se.Stderr, "dial-stdio --no-start"); got != tc.want {
			t.Errorf("remote command %q: --no-start is %v, want %v", se.Stderr, got, tc.want)
		}
	}
}
