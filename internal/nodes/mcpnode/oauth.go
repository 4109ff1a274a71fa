package mcpnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/nerve-dev/nerve/internal/mcpconf"
	"github.com/nerve-dev/nerve/internal/syncs"
	"github.com/nerve-dev/nerve/pkg/node"
)

// ErrAuthorizationRequired is wrapped by the error of a node whose server
// asked for OAuth authorization when nobody was there to give it (the
// node's Authorizer is nil).
var ErrAuthorizationRequired = errors.New("the server needs OAuth authorization")

// DefaultRedirectURL is where the authorization server sends the browser
// back after the person signs in, unless a node's oauth options say
// otherwise: a loopback address, as OAuth 2.1 asks of native clients.
const DefaultRedirectURL = "http://127.0.0.1:7591/callback"

// Authorizer does the interactive step of OAuth's authorization code flow
// for node id: it sends the person to args.URL (a browser) and returns the
// code, state and iss that the authorization server's redirect to the
// node's redirect URL carried. Everything else — discovery, client
// registration, PKCE, resource indicators, the token exchange, scope
// step-up — the node does itself.
type Authorizer func(ctx context.Context, id string, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error)

// Options are the mcp kind's settings that are not part of a node's spec.
type Options struct {
	// Authorize completes OAuth sign-in. Nil: a node whose server needs it
	// goes ERROR with ErrAuthorizationRequired and a message that tells the
	// person what to run.
	Authorize Authorizer
	// Tokens keeps sign-ins across daemon restarts (signin.go). Nil: they
	// live in the node's memory, lost with the daemon.
	Tokens TokenStore
}

// Factory returns the kind's node.Factory with opts (nil: none). A node
// resolves ${VAR} against env's variables and gives its process their
// environment.
func Factory(opts *Options) node.Factory {
	return func(spec node.Spec, env node.Env) (node.Node, error) {
		cfg := defaultConfig()
		cfg.lookup, cfg.environ = env.Lookup, env.Environ
		if opts != nil {
			cfg.authorize, cfg.tokens = opts.Authorize, opts.Tokens
		}
		return newNode(spec, env, cfg)
	}
}

// oauthHandlerLocked returns the node's OAuth handler. With a token store
// it is made at each connect from the saved sign-in (so `nerve node auth`
// and `--logout` take effect at the next start); without one it is made on
// first use and kept for the node's life, so a restart reuses the token it
// got. lifeMu must be held.
func (n *Node) oauthHandlerLocked(client *http.Client) (auth.OAuthHandler, error) {
	syncs.AssertLocked(&n.lifeMu)
	if n.oauth != nil && n.cfg.tokens == nil {
		return n.oauth, nil
	}
	o := mcpconf.OAuth{}
	if n.opts.OAuth != nil {
		o = *n.opts.OAuth
	}
	for _, f := range []*string{&o.ClientID, &o.ClientSecret, &o.ClientMetadataURL, &o.RedirectURL, &o.PrivateKey, &o.PrivateKeyFile,
		&o.Assertion, &o.AssertionFile, &o.IdPIssuer, &o.IdPClientID, &o.IdPClientSecret, &o.IdPTokenEndpoint, &o.IDToken} {
		v, err := mcpconf.Expand(*f, n.cfg.lookup)
		if err != nil {
			return nil, fmt.Errorf("mcp node %q: oauth: %w", n.ID(), err)
		}
		*f = v
	}
	if o.RedirectURL == "" {
		o.RedirectURL = DefaultRedirectURL
	}
	// Every handler discovers through backcompatTransport, so that servers
	// of MCP 2025-03-26 work too (backcompat.go).
	base := http.DefaultTransport
	if client != nil && client.Transport != nil {
		base = client.Transport
	}
	client = &http.Client{Transport: backcompatTransport{base: base}}
	if o.Grant == "client_credentials" {
		// No person: the client's own credentials get the token.
		var h auth.OAuthHandler
		if o.PrivateKey != "" || o.PrivateKeyFile != "" {
			signer, err := n.signingKey(o)
			if err != nil {
				return nil, err
			}
			h = newKeyJWTHandler(o.ClientID, signer, client)
		} else {
			cc, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
				Credentials: &oauthex.ClientCredentials{ClientID: o.ClientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}},
				HTTPClient:  client,
			})
			if err != nil {
				return nil, fmt.Errorf("mcp node %q: oauth client_credentials: %w", n.ID(), err)
			}
			h = cc
		}
		n.oauth = backcompatAuth{h}
		return n.oauth, nil
	}
	id, authorize := n.ID(), n.cfg.authorize
	ask := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		if authorize == nil {
			return nil, fmt.Errorf("%w: nobody to sign in at %s", ErrAuthorizationRequired, args.URL)
		}
		res, err := authorize(ctx, id, args)
		if res != nil {
			res.Iss = authorizationIss(ctx, res.Iss)
		}
		return res, err
	}
	switch o.Grant {
	case "jwt_bearer": // grants.go
		n.oauth = backcompatAuth{&jwtBearerHandler{clientID: o.ClientID, clientSecret: o.ClientSecret, client: client,
			assert: workloadAssertion(o.Assertion, o.AssertionFile), what: o.Grant}}
		return n.oauth, nil
	case "enterprise":
		idp := &oauthex.ClientCredentials{ClientID: o.IdPClientID}
		if o.IdPClientSecret != "" {
			idp.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.IdPClientSecret}
		}
		e := &enterprise{idp: idp, issuer: o.IdPIssuer, tokenEndpoint: o.IdPTokenEndpoint, idToken: o.IDToken, redirect: o.RedirectURL, scopes: o.Scopes, signIn: ask, client: client}
		n.oauth = backcompatAuth{&jwtBearerHandler{clientID: o.ClientID, clientSecret: o.ClientSecret, client: client, assert: e.assertion, what: o.Grant}}
		return n.oauth, nil
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: o.RedirectURL,
		// Registration is tried in this order: a client ID metadata
		// document, a pre-registered client, dynamic registration.
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName:   "nerve",
				RedirectURIs: []string{o.RedirectURL},
				// A native app: a public client that proves itself with
				// PKCE (OAuth 2.1 §2.1). Without this the server may
				// assume client_secret_basic, which nerve cannot do
				// without a secret.
				TokenEndpointAuthMethod: "none",
			},
		},
		AuthorizationCodeFetcher: ask,
		Client:                   client,
	}
	if o.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
	}
	if o.ClientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
		if o.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
		}
	}
	if len(o.Scopes) > 0 {
		scopes := append([]string(nil), o.Scopes...)
		cfg.ScopeFilter = func([]string) []string { return scopes }
	}
	if n.cfg.tokens != nil {
		url, err := mcpconf.Expand(n.server.URL, n.cfg.lookup)
		if err != nil {
			return nil, fmt.Errorf("mcp node %q: url: %w", n.ID(), err)
		}
		watch := &issuerWatch{base: client.Transport}
		client = &http.Client{Transport: watch}
		cfg.Client = client
		ts := &tokenSources{store: n.cfg.tokens, key: SignInKey(url), client: client, log: n.log,
			failed: func(err error) { n.refreshFailed.Store(new(err.Error())) }, issuers: watch}
		cfg.InitialTokenSource = ts.initial()
		cfg.NewTokenSource = ts.fresh
		// Ask for a refresh token, and use it before asking the person
		// again (the oauth2 token source refreshes an expired token).
		cfg.RequestRefreshToken = true
		cfg.DynamicClientRegistrationConfig.Metadata.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("mcp node %q: oauth options: %w", n.ID(), err)
	}
	n.oauth = backcompatAuth{h}
	return n.oauth, nil
}

// signingKey reads the private key of o (expanded) for private_key_jwt.
func (n *Node) signingKey(o mcpconf.OAuth) (*keySigner, error) {
	text, where := []byte(o.PrivateKey), "private_key"
	if o.PrivateKeyFile != "" {
		where = "private_key_file " + o.PrivateKeyFile
		if !filepath.IsAbs(o.PrivateKeyFile) {
			return nil, fmt.Errorf("mcp node %q: oauth %s: not an absolute path: write the whole path, or start it with ${HOME}", n.ID(), where)
		}
		b, err := os.ReadFile(o.PrivateKeyFile)
		if err != nil {
			return nil, fmt.Errorf("mcp node %q: oauth private_key_file: %w", n.ID(), err)
		}
		text = b
	} else if !bytes.Contains(text, []byte("\n")) {
		// A PEM in one line, as CI secret stores often keep it: \n for
		// each line break.
		text = bytes.ReplaceAll(text, []byte(`\n`), []byte("\n"))
	}
	s, err := parseSigningKey(text, o.SigningAlg)
	if err != nil {
		return nil, fmt.Errorf("mcp node %q: oauth %s: %w", n.ID(), where, err)
	}
	return s, nil
}
