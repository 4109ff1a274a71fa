package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/nerve-dev/nerve/pkg/api"
)

// MCPEndpoint returns the session's MCP endpoint over streamable HTTP and
// its bearer token.
func (s *Session) MCPEndpoint(ctx context.Context) (api.MCPEndpoint, error) {
	var ep api.MCPEndpoint
	err := s.c.do(ctx, http.MethodGet, s.path+"/mcp", nil, &ep)
	return ep, err
}

// MCP sends one MCP request (api.MCPReadResource, …) with params to an mcp
// node's server and decodes its result into result (if not nil).
func (s *Session) MCP(ctx context.Context, id, method string, params, result any) error {
	data, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encoding the params of %s: %w", method, err)
	}
	return s.c.do(ctx, http.MethodPost, s.nodePath(id)+"/mcp", api.MCPRequest{Method: method, Params: data}, result)
}

// Attachment receives a node's requests for a person (sampling,
// elicitation) and its resource updates; whoever holds it answers them.
// A request the server stops waiting for (it cancelled it, the call that
// caused it ended, or it timed out) is followed by an api.AttachWithdrawn
// line with its id and why: stop asking it and send no answer (the daemon
// refuses it, status 404). Next and Answer may be called from different
// goroutines; Close may be called twice.
type Attachment struct {
	s      *Session
	node   string
	cancel context.CancelFunc
	body   io.ReadCloser
	lines  *bufio.Scanner
	once   sync.Once
}

// Attach makes the caller the one who answers node id's requests for a
// person, until Close. It returns once the daemon has attached.
func (s *Session) Attach(ctx context.Context, id string) (*Attachment, error) {
	return s.attach(ctx, id, "")
}

// Next returns the next line; it fails with ErrWatchClosed when the
// stream ends. Close unblocks it.
func (a *Attachment) Next() (api.AttachLine, error) {
	if !a.lines.Scan() {
		if err := a.lines.Err(); err != nil && !errors.Is(err, context.Canceled) {
			return api.AttachLine{}, fmt.Errorf("%w: %v", ErrWatchClosed, err)
		}
		return api.AttachLine{}, ErrWatchClosed
	}
	var line api.AttachLine
	if err := json.Unmarshal(a.lines.Bytes(), &line); err != nil {
		return api.AttachLine{}, fmt.Errorf("%w: attach line: %v", ErrProtocol, err)
	}
	return line, nil
}

// Answer answers request reqID with result, or with failure when it is
// not nil.
func (a *Attachment) Answer(ctx context.Context, reqID string, result any, failure error) error {
	var ans api.AttachAnswer
	if failure != nil {
		ans.Error = failure.Error()
	} else {
		data, err := json.Marshal(result)
		if err != nil {
			return fmt.Errorf("encoding the answer: %w", err)
		}
		ans.Result = data
	}
	return a.s.c.do(ctx, http.MethodPost, a.s.nodePath(a.node)+"/mcp/attach/"+url.PathEscape(reqID), ans, nil)
}

// Close ends the attachment.
func (a *Attachment) Close() error {
	a.once.Do(func() {
		a.cancel()
		a.body.Close()
	})
	return nil
}
