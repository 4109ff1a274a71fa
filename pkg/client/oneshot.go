package client

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
)

// oneShot is the transport of Options.OneShot: each request on a
// connection of its own, written and read on the caller's goroutine by
// net/http itself (Request.Write, ReadResponse), and closed with the
// answer's body. http.Transport keeps a pool and runs two goroutines per
// connection, whose start a process that makes one request and exits pays
// for (docs/performance.md).
type oneShot struct {
	dial func(ctx context.Context) (net.Conn, error)
}

func (t oneShot) RoundTrip(req *http.Request) (*http.Response, error) {
	conn, err := t.dial(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &notSentError{err}
	}
	// Cancelling the request closes its connection: the daemon sees it
	// close and cancels what the request started.
	stop := context.AfterFunc(req.Context(), func() { conn.Close() })
	sc := &sentConn{Conn: conn}
	resp, err := roundTrip(sc, req)
	if err != nil {
		stop()
		conn.Close()
		if !sc.wrote.Load() {
			err = &notSentError{err}
		}
		return nil, err
	}
	resp.Body = &oneShotBody{ReadCloser: resp.Body, conn: conn, stop: stop}
	return resp, nil
}

func roundTrip(conn net.Conn, req *http.Request) (*http.Response, error) {
	if err := req.Write(conn); err != nil {
		return nil, err
	}
	return http.ReadResponse(bufio.NewReader(conn), req)
}

// oneShotBody is an answer's body that closes its connection.
type oneShotBody struct {
	io.ReadCloser
	conn net.Conn
	stop func() bool
}

func (b *oneShotBody) Close() error {
	b.stop()
	b.ReadCloser.Close()
	return b.conn.Close()
}
