package mcpserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"go.uber.org/zap"
)

// The endpoint's timeouts (issue 22, item 4). There is no WriteTimeout: an
// MCP session's GET event stream and a long tool call's POST answer stream
// for as long as they last. ReadTimeout bounds reading a request, headers
// and body; net/http lifts the read deadline once the body is read, so it
// does not cut those streams (TestEndpointBodyTimeout).
const (
	// headerTimeout bounds reading a request's headers, the first
	// request's included: a connection that says nothing is closed.
	headerTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection with no request.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultReadTimeout bounds reading a whole request, its body included.
	DefaultReadTimeout = 30 * time.Second
)

// EndpointOptions configure StartEndpoint.
type EndpointOptions struct {
	HTTPOptions
	// Listen is the address to listen on; it must be a loopback address
	// ("127.0.0.1:0", the default, picks a free port).
	Listen string
	// Limits bound the TCP connections (limit.go); zero fields take the
	// defaults.
	Limits ConnLimits
	// IdleTimeout closes keep-alive connections idle this long (0:
	// DefaultIdleTimeout).
	IdleTimeout time.Duration
	// ReadTimeout bounds reading a request (0: DefaultReadTimeout).
	ReadTimeout time.Duration
	// Mounts are more handlers on the same listener, behind the same
	// guards (mount.go).
	Mounts []Mount
}

// Endpoint is the MCP endpoint listening on 127.0.0.1.
type Endpoint struct {
	h    *HTTPHandler
	srv  *http.Server
	ln   *limitListener
	base string
	errc chan error
}

// StartEndpoint listens and serves the endpoint until Close.
func StartEndpoint(opts *EndpointOptions) (*Endpoint, error) {
	if opts == nil {
		return nil, errors.New("mcpserver: StartEndpoint needs options")
	}
	addr := opts.Listen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("MCP endpoint address %q: %w (use e.g. 127.0.0.1:7777)", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("MCP endpoint address %q is not a loopback address: nerve serves sessions to this machine only (use 127.0.0.1:PORT)", addr)
	}
	if err := checkMounts(opts.Mounts); err != nil {
		return nil, err
	}
	h, err := NewHTTPHandler(&opts.HTTPOptions)
	if err != nil {
		return nil, err
	}
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("listening for the MCP endpoint on %s: %w (pick another address, or 127.0.0.1:0 for any free port)", addr, err)
	}
	ln := newLimitListener(tcp, opts.Limits, h.log.Named("endpoint"))
	idle := cmp.Or(opts.IdleTimeout, DefaultIdleTimeout)
	read := cmp.Or(opts.ReadTimeout, DefaultReadTimeout)
	e := &Endpoint{
		h:    h,
		ln:   ln,
		base: "http://" + ln.Addr().String(),
		srv: &http.Server{
			Handler:           &router{mcp: h, mounts: opts.Mounts},
			ReadHeaderTimeout: headerTimeout,
			ReadTimeout:       read,
			IdleTimeout:       idle,
			ConnContext:       connContext,
		},
		errc: make(chan error, 1),
	}
	// net/http's own complaints (accept errors, bad requests) go to the
	// daemon's log, not to a stderr nobody reads.
	if l, err := zap.NewStdLogAt(h.log.Named("http"), zap.WarnLevel); err == nil {
		e.srv.ErrorLog = l
	}
	go func() { e.errc <- e.srv.Serve(ln) }()
	return e, nil
}

// Addr returns the address the endpoint listens on.
func (e *Endpoint) Addr() string { return e.ln.Addr().String() }

// URL returns the endpoint of session name.
func (e *Endpoint) URL(name string) string { return e.base + "/mcp/" + url.PathEscape(name) }

// NodeURL returns the endpoint of one node of a session.
func (e *Endpoint) NodeURL(name, id string) string {
	return e.URL(name) + "/node/" + url.PathEscape(id)
}

// Base returns the endpoint's root URL, http://127.0.0.1:PORT.
func (e *Endpoint) Base() string { return e.base }

// Token returns the bearer token.
func (e *Endpoint) Token() string { return e.h.opts.Token }

// Close stops listening, ends the open requests (event streams) after a
// short grace and stops every server.
func (e *Endpoint) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	err := e.srv.Shutdown(ctx)
	if err != nil {
		err = e.srv.Close()
	}
	e.h.Close()
	if serr := <-e.errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
