package client

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/nerve-dev/nerve/pkg/api"
)

// AttachCommander is Attach for a person at a Commander: the daemon offers
// node id's requests to it first (api.AttachOfferSample,
// api.AttachOfferElicit), and it may pass one on by answering with the
// error api.AttachPass. Requests it must answer come as plain
// api.AttachSample and api.AttachElicit lines.
// who says which Commander it is ("pid 4242 on /dev/pts/3"), for the
// caller whose question it is asked; it may be "".
func (s *Session) AttachCommander(ctx context.Context, id, who string) (*Attachment, error) {
	q := "?as=" + url.QueryEscape(api.AttachAsCommander)
	if who != "" {
		q += "&" + api.AttachWho + "=" + url.QueryEscape(who)
	}
	return s.attach(ctx, id, q)
}

// attach opens the attach stream of node id (query selects the flavour)
// and returns once its first line says the daemon attached.
func (s *Session) attach(ctx context.Context, id, query string) (*Attachment, error) {
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	resp, err := s.c.send(actx, http.MethodGet, s.nodePath(id)+"/mcp/attach"+query, nil)
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	a := &Attachment{s: s, node: id, cancel: cancel, body: resp.Body, lines: sc}
	first, err := a.Next()
	stop()
	if err != nil || first.Kind != api.AttachReady {
		a.Close()
		if err == nil {
			err = fmt.Errorf("%w: attach stream began with %q", ErrProtocol, first.Kind)
		}
		return nil, err
	}
	return a, nil
}
