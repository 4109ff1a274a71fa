package mcpnode

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// This file is the JWT bearer grant (RFC 7523 §2.1): the token is got with
// an assertion, a JWT someone else issued, instead of a person's sign-in
// or the client's own secret. Two MCP authorization extensions use it:
//
//   - workload identity federation (SEP-1933, oauth grant "jwt_bearer"):
//     the assertion is the JWT the workload's platform gives it (a CI
//     job's OIDC token, a Kubernetes service account token);
//   - enterprise-managed authorization (SEP-990, grant "enterprise"): the
//     assertion is an ID-JAG, which the enterprise's identity provider
//     issues for the person's ID token (RFC 8693 token exchange, the Go
//     SDK's oauthex.ExchangeToken); the ID token comes from a sign-in at
//     the identity provider (the SDK's extauth.PerformOIDCLogin, the
//     person in a browser as for any sign-in) or is given.
//
// The SDK's extauth.EnterpriseHandler does the second whole, but needs the
// MCP server's authorization server and resource before the server names
// them, and authenticates to that server's token endpoint only in the
// request body, where the server may take only HTTP Basic; nerve finds
// both by discovery and authenticates as the server's metadata asks.

// grantJWTBearer is RFC 7523's grant type.
const grantJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// asserter makes the assertion for the authorization server issuer, for
// the resource and scopes.
type asserter func(ctx context.Context, issuer, resource string, scopes []string) (string, error)

// jwtBearerHandler is an auth.OAuthHandler that gets each token with the
// JWT bearer grant. It never retries a refused grant nor tries another:
// the transport calls it once per 401.
type jwtBearerHandler struct {
	clientID, clientSecret string
	client                 *http.Client
	assert                 asserter
	what                   string // names the grant in messages

	// mu guards tokens.
	mu     sync.Mutex
	tokens oauth2.TokenSource
}

func (h *jwtBearerHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tokens, nil
}

// Authorize finds the authorization server (protected resource metadata,
// then its own), asks for the assertion and exchanges it for a token.
func (h *jwtBearerHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	defer io.Copy(io.Discard, resp.Body)
	prm, asm, scopes, err := discoverAuth(ctx, req, resp, h.client)
	if err != nil {
		return err
	}
	if g := asm.GrantTypesSupported; len(g) > 0 && !slices.Contains(g, grantJWTBearer) {
		return fmt.Errorf("the authorization server %s does not take the JWT bearer grant (%s) of oauth grant %s: it takes %s", asm.Issuer, grantJWTBearer, h.what, strings.Join(g, ", "))
	}
	assertion, err := h.assert(ctx, asm.Issuer, prm.Resource, scopes)
	if err != nil {
		return err
	}
	cfg := &oauth2.Config{ClientID: h.clientID, ClientSecret: h.clientSecret,
		Endpoint: oauth2.Endpoint{TokenURL: asm.TokenEndpoint, AuthStyle: authStyle(h.clientSecret, asm.TokenEndpointAuthMethodsSupported)}}
	opts := []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("grant_type", grantJWTBearer), oauth2.SetAuthURLParam("assertion", assertion)}
	if prm.Resource != "" { // RFC 8707, as MCP asks of every token request
		opts = append(opts, oauth2.SetAuthURLParam("resource", prm.Resource))
	}
	if len(scopes) > 0 {
		opts = append(opts, oauth2.SetAuthURLParam("scope", strings.Join(scopes, " ")))
	}
	// Exchange sends the (empty) code too; RFC 6749 §3.2 has servers
	// ignore parameters without a value.
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, h.client), "", opts...)
	if err != nil {
		return fmt.Errorf("oauth grant %s at %s: %w", h.what, asm.TokenEndpoint, err)
	}
	h.mu.Lock()
	// No refresh: an expired token is answered with a 401, and the next
	// Authorize asks for a new assertion.
	h.tokens = oauth2.StaticTokenSource(tok)
	h.mu.Unlock()
	return nil
}

// authStyle is how a client with secret authenticates at a token endpoint
// that takes methods: HTTP Basic unless only the body is offered; a
// public client names itself in the body.
func authStyle(secret string, methods []string) oauth2.AuthStyle {
	switch {
	case secret == "":
		return oauth2.AuthStyleInParams
	case len(methods) > 0 && !slices.Contains(methods, "client_secret_basic") && slices.Contains(methods, "client_secret_post"):
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleInHeader
}

// workloadAssertion is grant jwt_bearer's assertion: the JWT given, or
// read from file at each use (platforms renew it there).
func workloadAssertion(text, file string) asserter {
	return func(context.Context, string, string, []string) (string, error) {
		if file == "" {
			return strings.TrimSpace(text), nil
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("oauth assertion_file: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
}

// enterprise holds what grant enterprise needs of the identity provider.
type enterprise struct {
	idp           *oauthex.ClientCredentials
	issuer        string
	tokenEndpoint string // where the ID token is exchanged; "": discovered
	idToken       string // given; else a sign-in at the identity provider
	redirect      string
	scopes        []string // at the MCP server; empty: what it asks
	// signIn is the person's step of the sign-in at the identity
	// provider (the node's Authorizer).
	signIn auth.AuthorizationCodeFetcher
	client *http.Client
}

// assertion exchanges the person's ID token at the identity provider for
// an ID-JAG for the MCP server's authorization server issuer and resource.
func (e *enterprise) assertion(ctx context.Context, issuer, resource string, scopes []string) (string, error) {
	idToken := e.idToken
	if idToken == "" {
		tok, err := extauth.PerformOIDCLogin(ctx, &extauth.OIDCLoginConfig{
			IssuerURL: e.issuer, Credentials: e.idp, RedirectURL: e.redirect,
			Scopes: []string{"openid", "profile", "email"}, HTTPClient: e.client,
		}, e.signIn)
		if err != nil {
			return "", fmt.Errorf("signing in at the identity provider %s: %w", e.issuer, err)
		}
		idToken, _ = tok.Extra("id_token").(string)
		if idToken == "" {
			return "", fmt.Errorf("the identity provider %s gave no ID token", e.issuer)
		}
	}
	endpoint := e.tokenEndpoint
	if endpoint == "" {
		meta, err := auth.GetAuthServerMetadata(ctx, e.issuer, e.client)
		if err != nil || meta == nil {
			return "", fmt.Errorf("getting the identity provider's metadata at %s: %v (set its token endpoint: oauth idp_token_endpoint)", e.issuer, err)
		}
		endpoint = meta.TokenEndpoint
	}
	if len(e.scopes) > 0 {
		scopes = e.scopes
	}
	jag, err := oauthex.ExchangeToken(ctx, endpoint, &oauthex.TokenExchangeRequest{
		RequestedTokenType: oauthex.TokenTypeIDJAG, Audience: issuer, Resource: resource, Scope: scopes,
		SubjectToken: idToken, SubjectTokenType: oauthex.TokenTypeIDToken,
	}, e.idp, e.client)
	if err != nil {
		return "", fmt.Errorf("exchanging the ID token at the identity provider %s: %w", e.issuer, err)
	}
	return jag.AccessToken, nil
}

var _ auth.OAuthHandler = (*jwtBearerHandler)(nil)
