package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
)

// SSH is a daemon on another machine, reached through the system's ssh
// (docker's `-H ssh://` is the model): each connection is one ssh process
// that runs `nerve daemon dial-stdio` on the host, which starts that
// user's daemon there when it is not running and copies bytes between its
// stdin and stdout and the daemon's Unix socket. The local API then goes
// over it as over the socket. Nothing listens on a port and nerve has no
// transport of its own: the user's ssh config, keys, agent and known
// hosts decide everything about the connection.
//
// Give Dial to Options.Dial. A client keeps its connections (one ssh
// process each) alive between requests; Options.OneShot makes one per
// request.
type SSH struct {
	// User, Host and Port are the parts of ssh://[user@]host[:port]; User
	// and Port may be empty (the ssh config decides).
	User, Host, Port string
	// Command is the ssh program and its options, as words (nerve splits
	// NERVE_SSH_COMMAND as a shell would); empty means "ssh".
	Command []string
	// Remote is the command line that runs nerve on the host, given as is
	// to the remote user's shell (NERVE_REMOTE_COMMAND); empty means
	// "nerve". " daemon dial-stdio" is appended to it.
	Remote string
}

// ParseSSH reads ssh://[user@]host[:port]. A password, a path, a query
// or a fragment is refused.
func ParseSSH(raw string) (*SSH, error) {
	bad := func(why string) error {
		return fmt.Errorf("%q is not ssh://[USER@]HOST[:PORT]: %s", raw, why)
	}
	if !strings.Contains(raw, "://") {
		return nil, bad("write ssh://" + strings.TrimPrefix(raw, "ssh:"))
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, bad(err.Error())
	}
	switch {
	case u.Scheme != "ssh":
		return nil, bad("nerve reaches another machine through ssh only")
	case u.Hostname() == "":
		return nil, bad("it names no host")
	case u.Path != "" && u.Path != "/":
		return nil, bad("a path is not used (the daemon is the host user's)")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, bad("a query or a fragment is not used")
	}
	s := &SSH{Host: u.Hostname(), Port: u.Port()}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			return nil, bad("a password in the URL is refused: use a key (ssh-agent) or your ssh config")
		}
		s.User = u.User.Username()
	}
	if strings.HasPrefix(s.Host, "-") || strings.HasPrefix(s.User, "-") {
		return nil, bad("a host or user may not start with '-'")
	}
	return s, nil
}

// String returns the ssh:// URL.
func (s *SSH) String() string {
	u := url.URL{Scheme: "ssh", Host: s.Host}
	if s.Port != "" {
		u.Host = net.JoinHostPort(s.Host, s.Port)
	}
	if s.User != "" {
		u.User = url.User(s.User)
	}
	return u.String()
}

// Args returns the command line of one connection: the ssh command, the
// options nerve adds unless the command already sets them (a connect
// timeout of 30 s, no terminal), the user and port of the URL, the host,
// and the remote command. With start false the remote side only connects
// to a daemon that runs (`--no-start`).
func (s *SSH) Args(start bool) []string {
	argv := append([]string(nil), s.Command...)
	if len(argv) == 0 {
		argv = []string{"ssh"}
	}
	if !strings.Contains(strings.ToLower(strings.Join(argv[1:], " ")), "connecttimeout") {
		argv = append(argv, "-o", "ConnectTimeout=30")
	}
	if !slices.Contains(argv[1:], "-T") {
		argv = append(argv, "-T")
	}
	if s.User != "" {
		argv = append(argv, "-l", s.User)
	}
	if s.Port != "" {
		argv = append(argv, "-p", s.Port)
	}
	remote := s.Remote
	if remote == "" {
		remote = "nerve"
	}
	remote += " daemon dial-stdio"
	if !start {
		remote += " --no-start"
	}
	return append(argv, "--", s.Host, remote)
}

// Dial starts one ssh process and returns it as a connection. Whether
// ssh could connect shows on the first read: an error there is an
// *SSHError saying what failed and how to fix it. A ctx that says no to
// Revive (WithRevive) asks the host to connect only to a daemon that
// runs, so what watches a daemon in the background never starts one.
func (s *SSH) Dial(ctx context.Context) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	argv := s.Args(revives(ctx))
	c, err := startCmd(argv, s.Host, s.ended)
	if err != nil {
		fix := "install OpenSSH's client"
		if len(s.Command) > 0 {
			fix = "check NERVE_SSH_COMMAND"
		}
		return nil, &SSHError{Host: s.Host, msg: fmt.Sprintf("cannot run ssh to reach %s (%s): %v; %s", s.Host, argv[0], err, fix), err: err}
	}
	return c, nil
}

// SSHError is a connection through ssh that failed or was lost; it
// matches ErrDaemonUnavailable, and its message says what to do.
type SSHError struct {
	// Host is the host of the URL.
	Host string
	// Lost says that the connection worked and then ended: the next
	// connection may well work.
	Lost bool
	// Stderr is the end of what ssh (and the remote nerve) printed.
	Stderr string
	msg    string
	err    error
}

func (e *SSHError) Error() string { return e.msg }

func (e *SSHError) Unwrap() []error {
	if e.err == nil {
		return []error{ErrDaemonUnavailable}
	}
	return []error{ErrDaemonUnavailable, e.err}
}

// ended says why an ssh connection's stdout ended, once the process has
// exited: the daemon closed the connection (ssh exited 0: plain EOF, as a
// socket's), the connection was lost after it worked, ssh could not
// connect (255), the remote shell found no nerve (127), or the remote
// nerve failed.
func (s *SSH) ended(c *cmdConn, err error) error {
	code := c.exitCode()
	if code == 0 && c.got.Load() {
		// The daemon closed the connection, and dial-stdio ended with it.
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		return err
	}
	stderr := c.stderr.String()
	last := lastLine(stderr)
	e := &SSHError{Host: s.Host, Stderr: stderr, err: c.waitErr}
	switch {
	case code == 0:
		e.msg = fmt.Sprintf("nerve on %s closed the connection before answering (%s): see `%s` there", s.Host, orExit(last, code), "nerve daemon status")
	case c.got.Load() || code == -1:
		// It worked (or ssh was killed): the link is gone, not the setup.
		e.Lost = true
		why := last
		if why == "" {
			why = fmt.Sprint("ssh ended: ", c.waitErr)
		}
		e.msg = fmt.Sprintf("the connection to %s through ssh was lost: %s; the next command reconnects", s.Host, why)
	case code == 127 || code == 126:
		e.msg = fmt.Sprintf("nerve is not installed on %s or not on the PATH of a non-interactive ssh session (%s): install it there, or set NERVE_REMOTE_COMMAND to the command that runs it (e.g. NERVE_REMOTE_COMMAND=~/go/bin/nerve)", s.Host, orExit(last, code))
	case code == 255:
		e.msg = fmt.Sprintf("ssh to %s failed: %s: %s", s.Host, orExit(last, code), s.sshFix(stderr))
	case strings.Contains(stderr, `unknown command "dial-stdio"`):
		e.msg = fmt.Sprintf("nerve on %s is too old to be reached through ssh (it has no `nerve daemon dial-stdio`): install this version there", s.Host)
	default:
		e.msg = fmt.Sprintf("nerve on %s could not reach its daemon: %s", s.Host, orExit(strings.TrimPrefix(last, "nerve: "), code))
	}
	return e
}

// sshFix is the fix for an ssh that could not connect, from what it said.
func (s *SSH) sshFix(stderr string) string {
	try := "`" + s.tryCommand() + "`"
	switch {
	case strings.Contains(stderr, "Host key verification failed") || strings.Contains(stderr, "REMOTE HOST IDENTIFICATION HAS CHANGED"):
		return "check the host's key and accept it by running " + try + " in a terminal (nerve's ssh cannot ask)"
	case strings.Contains(stderr, "Permission denied"):
		return "nerve's ssh cannot ask for a password or a passphrase: load your key into ssh-agent (`ssh-add`), then check that " + try + " works without a prompt"
	case strings.Contains(stderr, "Could not resolve hostname"):
		return "check the host's name, or give it a Host entry in ~/.ssh/config"
	default:
		return "check that " + try + " works in a terminal"
	}
}

// tryCommand is the ssh command a person runs to check the connection.
func (s *SSH) tryCommand() string {
	argv := append([]string(nil), s.Command...)
	if len(argv) == 0 {
		argv = []string{"ssh"}
	}
	argv = append(argv, "-o", "BatchMode=yes")
	if s.User != "" {
		argv = append(argv, "-l", s.User)
	}
	if s.Port != "" {
		argv = append(argv, "-p", s.Port)
	}
	return strings.Join(append(argv, s.Host, "true"), " ")
}

// lastLine is the last line of what ssh printed, without its full stop
// (it goes inside a sentence).
func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSuffix(strings.TrimSpace(s), ".")
}

func orExit(last string, code int) string {
	if last != "" {
		return last
	}
	return fmt.Sprintf("exit status %d", code)
}

// sshError returns the *SSHError in err's chain, if there is one.
func sshError(err error) *SSHError {
	var se *SSHError
	if errors.As(err, &se) {
		return se
	}
	return nil
}
