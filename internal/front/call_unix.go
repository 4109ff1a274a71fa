//go:build unix

package front

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/nerve-dev/nerve/internal/callline"
	"github.com/nerve-dev/nerve/internal/paths"
	"github.com/nerve-dev/nerve/internal/version"
	"github.com/nerve-dev/nerve/pkg/api"
)

// fastCall makes `nerve call LINE` (args is os.Args) itself when it can:
// one request to a daemon that is running, progress shown as it comes,
// and an answer of plain text printed. It reports done=false, having sent
// nothing, for every line it leaves to the core from the start (flags,
// `-`, `:command`, no daemon answering); once the request is sent, every
// answer it does not print itself it hands to the core with the
// connection, and does not return.
func fastCall(self string, args []string) (code int, done bool) {
	words := args[2:]
	if len(words) == 0 || len(words[0]) > 0 && words[0][0] == '-' || words[len(words)-1] == "-" {
		return 0, false
	}
	line := callline.Join(words)
	id := callline.Node(line)
	if id == "" {
		return 0, false
	}
	p, err := paths.FromEnv(os.Getenv)
	if err != nil {
		return 0, false
	}
	conn, err := dialUnix(p.Socket)
	if err != nil {
		return 0, false
	}
	session := os.Getenv("NERVE_SESSION")
	if session == "" {
		session = "default"
	}
	body, err := json.Marshal(api.CallRequest{Line: line})
	if err != nil {
		conn.Close()
		return 0, false
	}
	req := fmt.Sprintf("POST /v%s/sessions/%s/nodes/%s/call HTTP/1.1\r\nHost: nerve\r\nUser-Agent: nerve\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s: %s\r\nConnection: close\r\n\r\n",
		api.Version, url.PathEscape(session), url.PathEscape(id), len(body), api.HeaderCaller, callerCLI)
	// SIGINT and SIGTERM cancel the call (the daemon sees the connection
	// close); the core then says which call was cancelled.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var interrupted atomic.Bool
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-sigs:
			interrupted.Store(true)
			syscall.Shutdown(int(conn.Fd()), syscall.SHUT_RDWR)
		case <-stop:
		}
	}()
	c := &call{node: id, conn: conn}
	code, err = c.run(append([]byte(req), body...))
	close(stop)
	<-watched
	signal.Stop(sigs)
	switch {
	case err != nil && interrupted.Load():
		conn.Close()
		return runCore(self, args, HandoffInterrupted), true
	case errors.Is(err, errNotSent):
		conn.Close()
		return 0, false
	case err != nil:
		return c.handOff(self, args), true
	}
	conn.Close()
	return code, true
}

// callerCLI is node.CallerCLI: a call from the command line.
const callerCLI = "cli"

// errNotSent: the request did not reach the daemon whole; nothing ran.
var errNotSent = errors.New("the request was not sent")

// errHandOff: the rest of the answer is the core's to read.
var errHandOff = errors.New("handed to the core")

// call is one call's request and answer.
type call struct {
	node  string
	conn  *os.File
	raw   bytes.Buffer // every byte read from conn
	shown int          // stream lines shown (or passed over) here
}

// run sends req and reads the answer: it prints a plain answer and
// returns the exit code, or returns an error to hand the rest to the core.
func (c *call) run(req []byte) (int, error) {
	if _, err := c.conn.Write(req); err != nil {
		return 0, errNotSent
	}
	r := bufio.NewReaderSize(io.TeeReader(c.conn, &c.raw), 64<<10)
	resp, err := readResponse(r)
	if err != nil {
		return 0, err
	}
	if resp.status != 200 || !sameVersion(resp.header[lowerHeaderVersion]) {
		return 0, errHandOff // an error the core words, or a warning it gives
	}
	lines := bufio.NewReaderSize(resp.body, 64<<10)
	for {
		b, err := lines.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var l api.CallLine
			if json.Unmarshal(b, &l) != nil {
				return 0, errHandOff
			}
			switch l.Kind {
			case api.LineResult:
				return printPlain(l.Result)
			case api.LineError, api.LineTools:
				return 0, errHandOff
			case api.EventStep:
				if l.Step == "graph" {
					return 0, errHandOff // a graph's steps: the core draws them
				}
			default:
				if s, ok := callline.Event(c.node, l.CallEvent); ok {
					os.Stderr.WriteString(s)
				}
			}
			c.shown++
		}
		if err != nil {
			return 0, err // cut before its result: the core says so
		}
	}
}

var lowerHeaderVersion = toLower(api.HeaderVersion)

func toLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// sameVersion reports whether the daemon's version is this nerve's as far
// as the core would tell (it warns when two stamped builds differ).
func sameVersion(daemon string) bool {
	mine := version.String()
	return daemon == mine || daemon == "devel" || mine == "devel"
}

// plainResult is a result the front prints: text blocks and nothing else.
type plainResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// printPlain prints a result of text blocks as the core does (each block's
// text ending in a newline; an error's after "error: ", on stderr) and
// returns the exit code; any other result is the core's to print.
func printPlain(raw json.RawMessage) (int, error) {
	var res plainResult
	if json.Unmarshal(raw, &res) != nil || len(res.StructuredContent) > 0 && string(res.StructuredContent) != "null" {
		return 0, errHandOff
	}
	var out []byte
	for _, c := range res.Content {
		if c.Type != "text" {
			return 0, errHandOff
		}
		out = append(out, c.Text...)
		if c.Text != "" && c.Text[len(c.Text)-1] != '\n' {
			out = append(out, '\n')
		}
	}
	if len(res.Content) == 0 {
		out = append(out, "(no output)\n"...)
	}
	w, code := os.Stdout, exitOK
	if res.IsError {
		out = append([]byte("error: "), out...)
		w, code = os.Stderr, exitToolError
	}
	if _, err := w.Write(out); err != nil {
		fmt.Fprintf(os.Stderr, "nerve: %v\n", err)
		return exitFailed, nil
	}
	return code, nil
}

// handOff execs the core with the connection and the bytes read from it
// so far; the core reads the answer from its start.
func (c *call) handOff(self string, args []string) int {
	f, err := os.CreateTemp("", "nerve-call-")
	if err == nil {
		os.Remove(f.Name())
		_, err = f.Write(c.raw.Bytes())
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err == nil {
		err = inherit(int(f.Fd()))
	}
	if err == nil {
		err = inherit(int(c.conn.Fd()))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "nerve: handing the call's answer to nerve-core: %v\n", err)
		return exitFailed
	}
	return runCore(self, args, strconv.Itoa(int(c.conn.Fd()))+" "+strconv.Itoa(int(f.Fd()))+" "+strconv.Itoa(c.shown))
}

// dialUnix connects to the daemon's socket; the descriptor is blocking
// (os.File reads on a thread), closed on exec unless handed off.
func dialUnix(path string) (*os.File, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}
