package mcpnode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// This file lets nerve sign in to servers of MCP 2025-03-26, which
// predate protected resource metadata. Such a server's authorization base
// URL is its own URL with the path removed, and its authorization server
// metadata is at that base's /.well-known/oauth-authorization-server
// (spec 2025-03-26, basic/authorization §2.3). Some name there an issuer
// other than the base (the conformance suite's names …/oauth), which the
// Go SDK refuses (RFC 8414 §3.3: the issuer must be the URL the metadata
// was derived from) before nerve sees it. For such a server — and only
// when no protected resource metadata answered and the issuer is on the
// MCP server's own origin — nerve takes the metadata as the base's: it
// hands the SDK the metadata with the base as issuer and uses the
// endpoints it names. A server with protected resource metadata, or
// metadata naming another origin, meets the SDK's check unchanged.

// legacyKey is the context key of a legacyProbe.
type legacyKey struct{}

// legacyProbe follows one Authorize on a server whose challenge named no
// resource metadata.
type legacyProbe struct {
	base string // the authorization base URL: scheme://host of the MCP server

	// The discovery requests and the authorization response of one
	// Authorize come one after another; atomics keep a handler that ran
	// them on several goroutines race-free, holding no lock while a
	// metadata document is read.
	prm    atomic.Bool            // a protected resource metadata document answered
	issuer atomic.Pointer[string] // the issuer the base's metadata named, when it was not base
}

// backcompatAuth wraps an OAuth handler whose HTTP client goes through
// backcompatTransport.
type backcompatAuth struct{ auth.OAuthHandler }

func (h backcompatAuth) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	for _, c := range challenges {
		if c.Params["resource_metadata"] != "" { // a server of 2025-06-18 or later
			return h.OAuthHandler.Authorize(ctx, req, resp)
		}
	}
	p := &legacyProbe{base: origin(req.URL)}
	return h.OAuthHandler.Authorize(context.WithValue(ctx, legacyKey{}, p), req, resp)
}

// authorizationIss maps the iss of an authorization response (RFC 9207)
// from the issuer the metadata named to the base the SDK was given.
func authorizationIss(ctx context.Context, iss string) string {
	p, _ := ctx.Value(legacyKey{}).(*legacyProbe)
	if p == nil {
		return iss
	}
	if named := p.issuer.Load(); named != nil && iss == *named {
		return p.base
	}
	return iss
}

// backcompatTransport watches the discovery requests of an Authorize that
// carries a legacyProbe (see the top of this file).
type backcompatTransport struct{ base http.RoundTripper }

func (t backcompatTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	p, _ := req.Context().Value(legacyKey{}).(*legacyProbe)
	if p == nil || err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	switch path := req.URL.Path; {
	case strings.HasPrefix(path, "/.well-known/oauth-protected-resource"):
		p.prm.Store(true)
	case path == "/.well-known/oauth-authorization-server" || path == "/.well-known/openid-configuration":
		if origin(req.URL) == p.base {
			return p.rebase(resp)
		}
	}
	return resp, nil
}

// rebase gives the base as issuer to the metadata resp carries, when no
// protected resource metadata answered and the issuer it names is another
// URL on the base's origin.
func (p *legacyProbe) rebase(resp *http.Response) (*http.Response, error) {
	if p.prm.Load() {
		return resp, nil
	}
	// The SDK reads at most 1 MiB of metadata; one byte more fails it there.
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20+1))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading authorization server metadata: %w", err)
	}
	var m map[string]json.RawMessage
	var issuer string
	if json.Unmarshal(body, &m) == nil && json.Unmarshal(m["issuer"], &issuer) == nil &&
		strings.TrimSuffix(issuer, "/") != p.base && sameOrigin(issuer, p.base) {
		m["issuer"], _ = json.Marshal(p.base)
		if b, err := json.Marshal(m); err == nil {
			body = b
			p.issuer.Store(&issuer)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// origin returns scheme://host of u.
func origin(u *url.URL) string { return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String() }

// sameOrigin reports whether the URL s is on origin base.
func sameOrigin(s, base string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Host != "" && origin(u) == base
}
