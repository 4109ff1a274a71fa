package mcpnode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"go.uber.org/zap"
	"golang.org/x/oauth2"
)

// TokenStore keeps OAuth sign-ins across daemon restarts (the OS keychain,
// or 0600 files: internal/tokenstore). Get returns an error wrapping
// nothing in particular when the key is absent; callers treat any error
// as "no sign-in".
type TokenStore interface {
	Get(key string) ([]byte, error)
	Set(key string, secret []byte) error
	Delete(key string) error
}

// savedSignIn is what a sign-in leaves in the TokenStore: the client it
// registered and the tokens, enough to refresh without asking the person.
type savedSignIn struct {
	// Issuer is the authorization server that issued it: a sign-in is
	// bound to its issuer, its client registration too (SEP-2352).
	Issuer       string           `json:"issuer,omitempty"`
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	AuthURL      string           `json:"auth_url"`
	TokenURL     string           `json:"token_url"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style,omitempty"`
	Scopes       []string         `json:"scopes,omitempty"`
	RedirectURL  string           `json:"redirect_url,omitempty"`
	Token        *oauth2.Token    `json:"token"`
}

// SignInKey is the TokenStore key of the sign-in to the MCP server at url:
// one sign-in per server, shared by every node and client of the daemon.
func SignInKey(url string) string { return "oauth|" + url }

// Logout forgets the sign-in to the server at url.
func Logout(store TokenStore, url string) error { return store.Delete(SignInKey(url)) }

// tokenSources make the handler's token sources persist what they hold.
type tokenSources struct {
	store  TokenStore
	key    string
	client *http.Client
	log    *zap.Logger
	// failed records the last refresh that the authorization server
	// refused (invalid_grant): the message then says so.
	failed func(error)
	// issuers names the issuer of each token endpoint whose
	// authorization server metadata the handler read (issuerWatch).
	issuers *issuerWatch
}

// initial returns the saved sign-in's token source, or nil with none.
func (ts *tokenSources) initial() oauth2.TokenSource {
	b, err := ts.store.Get(ts.key)
	if err != nil {
		return nil
	}
	var s savedSignIn
	if err := json.Unmarshal(b, &s); err != nil || s.Token == nil {
		ts.log.Warn("a saved sign-in cannot be read; the server will ask again", zap.Error(err))
		return nil
	}
	cfg := &oauth2.Config{ClientID: s.ClientID, ClientSecret: s.ClientSecret, RedirectURL: s.RedirectURL, Scopes: s.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: s.AuthURL, TokenURL: s.TokenURL, AuthStyle: s.AuthStyle}}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, ts.client)
	p := ts.wrap(cfg, cfg.TokenSource(ctx, s.Token), s.Token)
	p.issuer = s.Issuer
	return p
}

// fresh is auth.AuthorizationCodeHandlerConfig.NewTokenSource: it saves a
// new sign-in and returns its persisting token source.
func (ts *tokenSources) fresh(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	p := ts.wrap(cfg, cfg.TokenSource(ctx, tok), nil)
	if _, err := p.Token(); err != nil { // saves it
		return nil, err
	}
	return p, nil
}

func (ts *tokenSources) wrap(cfg *oauth2.Config, base oauth2.TokenSource, saved *oauth2.Token) *persisting {
	p := &persisting{ts: ts, cfg: cfg, base: base}
	if saved != nil {
		p.last = saved.AccessToken
	}
	return p
}

// persisting saves every new token its base source gives (a sign-in, a
// refresh) and forgets the sign-in when a refresh is refused.
type persisting struct {
	ts     *tokenSources
	cfg    *oauth2.Config
	base   oauth2.TokenSource
	issuer string // of a saved sign-in

	mu   sync.Mutex
	last string // the access token last saved
}

func (p *persisting) Token() (*oauth2.Token, error) {
	t, err := p.base.Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			// The refresh token is no good: forget it, so the next start
			// asks for a sign-in rather than refreshing in vain — unless
			// the store holds a newer sign-in (another node of the same
			// server refreshed, or `nerve node auth` ran), which the next
			// start uses.
			p.mu.Lock()
			last := p.last
			p.mu.Unlock()
			var cur savedSignIn
			if b, gerr := p.ts.store.Get(p.ts.key); gerr == nil && json.Unmarshal(b, &cur) == nil && cur.Token != nil && cur.Token.AccessToken != last {
				return nil, err
			}
			if derr := p.ts.store.Delete(p.ts.key); derr != nil {
				p.ts.log.Warn("forgetting a refused sign-in", zap.Error(derr))
			}
			if p.ts.failed != nil {
				p.ts.failed(err)
			}
		}
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.AccessToken == p.last {
		return t, nil
	}
	issuer := p.issuer
	if issuer == "" && p.ts.issuers != nil {
		issuer = p.ts.issuers.of(p.cfg.Endpoint.TokenURL)
	}
	var old savedSignIn
	if b, err := p.ts.store.Get(p.ts.key); err == nil && json.Unmarshal(b, &old) == nil && old.Issuer != "" && issuer != "" && old.Issuer != issuer {
		// The server moved to another authorization server: the sign-in
		// at the old one (its tokens, its client) is never used again.
		p.ts.log.Info("the server moved to another authorization server; the sign-in at the old one is forgotten",
			zap.String("from", old.Issuer), zap.String("to", issuer))
	}
	s := savedSignIn{Issuer: issuer, ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret, AuthURL: p.cfg.Endpoint.AuthURL,
		TokenURL: p.cfg.Endpoint.TokenURL, AuthStyle: p.cfg.Endpoint.AuthStyle, Scopes: p.cfg.Scopes, RedirectURL: p.cfg.RedirectURL, Token: t}
	b, err := json.Marshal(s)
	if err == nil {
		err = p.ts.store.Set(p.ts.key, b)
	}
	if err != nil {
		// The token works now; only a later restart will ask again.
		p.ts.log.Warn("saving the sign-in; a daemon restart will ask for it again", zap.Error(err))
	} else {
		p.last = t.AccessToken
	}
	return t, nil
}

// issuerWatch reads the authorization server metadata the OAuth handler
// fetches and remembers the issuer of each token endpoint, so that a
// sign-in is saved with its issuer (the SDK hands nerve the token and the
// endpoints, not the issuer).
type issuerWatch struct {
	base http.RoundTripper

	mu sync.Mutex
	by map[string]string // token endpoint → issuer
}

func (w *issuerWatch) of(tokenURL string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.by[tokenURL]
}

func (w *issuerWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK ||
		(!strings.Contains(req.URL.Path, "/.well-known/oauth-authorization-server") && !strings.Contains(req.URL.Path, "/.well-known/openid-configuration")) {
		return resp, err
	}
	// The SDK reads at most 1 MiB of metadata; one byte more fails it there.
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20+1))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		return resp, nil
	}
	var m struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	if json.Unmarshal(body, &m) == nil && m.Issuer != "" && m.TokenEndpoint != "" {
		w.mu.Lock()
		if w.by == nil {
			w.by = map[string]string{}
		}
		w.by[m.TokenEndpoint] = m.Issuer
		w.mu.Unlock()
	}
	return resp, nil
}

var _ auth.OAuthHandler = (*auth.AuthorizationCodeHandler)(nil)
