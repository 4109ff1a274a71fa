package daemon

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nerve-dev/nerve/internal/syncs"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// defaultCallLogMax is the call log's size before rotation.
const defaultCallLogMax = 10 << 20

// maxLoggedArgs is how much of a call's arguments the log keeps as JSON;
// longer arguments are kept as a cut preview string.
const maxLoggedArgs = 2048

// maxSummary is how much of a result's text the log keeps.
const maxSummary = 200

// CallRecord is one line of the call log.
type CallRecord struct {
	Time    time.Time `json:"time"`
	Session string    `json:"session"`
	Node    string    `json:"node"`
	Tool    string    `json:"tool"`
	// Caller is who made the call: cli, repl, api, mcp (with the MCP
	// client's name), graph (with the graph, run and step), llm.
	Caller      *node.Caller    `json:"caller,omitempty"`
	Args        json.RawMessage `json:"args,omitempty"`
	ArgsPreview string          `json:"args_preview,omitempty"`
	Result      string          `json:"result,omitempty"`
	IsError     bool            `json:"is_error,omitempty"`
	DurationMS  float64         `json:"duration_ms"`
	Error       string          `json:"error,omitempty"`
	// Policy is what the session's call policy decided (allowed, asked
	// and approved by whom, denied, timed out); absent when it had
	// nothing to decide.
	Policy *api.Decision `json:"policy,omitempty"`
}

// callLog appends CallRecords as JSON lines, moving the file to path.1
// when it passes max bytes.
type callLog struct {
	path string
	max  int64
	// mu guards the fields below.
	mu   sync.Mutex
	f    *os.File
	size int64
}

func openCallLog(path string, max int64) (*callLog, error) {
	if max <= 0 {
		max = defaultCallLogMax
	}
	l := &callLog{path: path, max: max}
	l.mu.Lock() // no one else has l yet; openLocked asserts it
	defer l.mu.Unlock()
	if err := l.openLocked(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *callLog) openLocked() error {
	syncs.AssertLocked(&l.mu)
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return fmt.Errorf("creating the call log folder: %w", err)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the call log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("opening the call log: %w", err)
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// record logs one finished call of session sess.
func (l *callLog) record(sess string, c *session.CallInfo) error {
	args, res, callErr := c.Arguments, c.Result, c.Err
	rec := CallRecord{
		Time:       c.Start.UTC(),
		Session:    sess,
		Node:       c.Node,
		Tool:       c.Tool,
		DurationMS: float64(c.Duration.Microseconds()) / 1000,
	}
	if c.Caller.Kind != "" {
		rec.Caller = &c.Caller
	}
	rec.Policy = c.Decision
	if len(args) <= maxLoggedArgs && json.Valid(args) {
		rec.Args = args
	} else if len(args) > 0 {
		rec.ArgsPreview = cut(string(args), maxLoggedArgs)
	}
	if callErr != nil {
		rec.Error = callErr.Error()
	} else if res != nil {
		rec.IsError = res.IsError
		rec.Result = cut(node.ResultText(res, maxSummary*2), maxSummary)
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	if l.size+int64(len(line)) > l.max && l.size > 0 {
		l.f.Close()
		l.f = nil
		if err := os.Rename(l.path, l.path+".1"); err != nil {
			return fmt.Errorf("rotating the call log: %w", err)
		}
		if err := l.openLocked(); err != nil {
			return err
		}
	}
	n, err := l.f.Write(line)
	l.size += int64(n)
	return err
}

func (l *callLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// cut keeps at most n bytes of s, on a UTF-8 boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
