package mcpnode

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// This file is private_key_jwt client authentication (RFC 7523 §2.2,
// OpenID Connect Core §9) for the client-credentials grant: the Go SDK's
// handler (v1.8.0) takes only a client secret. The assertion is signed
// with the standard library; a JWS is three base64url parts, and the few
// algorithms a client needs are one call each.

// assertionType is RFC 7523's client_assertion_type.
const assertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// assertionLifetime bounds a client assertion: it is made for one token
// request, so a short life limits what a leaked one is worth.
const assertionLifetime = 5 * time.Minute

// keySigner signs client assertions with one private key.
type keySigner struct {
	alg  string // JWS "alg"
	key  crypto.Signer
	hash crypto.Hash // zero for EdDSA
}

// parseSigningKey reads a PEM private key (PKCS #8, SEC 1 or PKCS #1) and
// the algorithm to sign with: alg, or the key's own when alg is empty.
func parseSigningKey(pemText []byte, alg string) (*keySigner, error) {
	block, _ := pem.Decode(pemText)
	if block == nil {
		return nil, errors.New("no PEM block found: want -----BEGIN PRIVATE KEY----- (PKCS #8), EC PRIVATE KEY or RSA PRIVATE KEY")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("PEM block %q is not a private key: want PRIVATE KEY, EC PRIVATE KEY or RSA PRIVATE KEY", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("parsing the %s: %w", strings.ToLower(block.Type), err)
	}
	var own string
	var allowed []string
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			own = "ES256"
		case elliptic.P384():
			own = "ES384"
		case elliptic.P521():
			own = "ES512"
		default:
			return nil, fmt.Errorf("an EC key on curve %s: JWS signs with P-256, P-384 or P-521", k.Curve.Params().Name)
		}
		allowed = []string{own}
	case *rsa.PrivateKey:
		own, allowed = "RS256", []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
	case ed25519.PrivateKey:
		own, allowed = "EdDSA", []string{"EdDSA"}
	default:
		return nil, fmt.Errorf("a %T key: use an EC, RSA or Ed25519 key", key)
	}
	if alg == "" {
		alg = own
	}
	if !slices.Contains(allowed, alg) {
		return nil, fmt.Errorf("signing_alg %s does not suit this key: use %s", alg, strings.Join(allowed, " or "))
	}
	s := &keySigner{alg: alg, key: key.(crypto.Signer)}
	switch alg[len(alg)-3:] {
	case "256":
		s.hash = crypto.SHA256
	case "384":
		s.hash = crypto.SHA384
	case "512":
		s.hash = crypto.SHA512
	}
	return s, nil
}

// assertion returns a client assertion for clientID, to be presented to
// the authorization server audience: iss and sub are the client, exp five
// minutes on, jti never the same twice.
func (s *keySigner) assertion(clientID, audience string, now time.Time) (string, error) {
	header, _ := json.Marshal(map[string]string{"alg": s.alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": clientID, "sub": clientID, "aud": audience, "jti": rand.Text(),
		"iat": now.Unix(), "exp": now.Add(assertionLifetime).Unix(),
	})
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sig, err := s.sign([]byte(input))
	if err != nil {
		return "", fmt.Errorf("signing the client assertion (%s): %w", s.alg, err)
	}
	return input + "." + enc.EncodeToString(sig), nil
}

// sign returns the JWS signature of input (RFC 7518 §3).
func (s *keySigner) sign(input []byte) ([]byte, error) {
	if s.hash == 0 { // EdDSA signs the message itself
		return s.key.Sign(rand.Reader, input, crypto.Hash(0))
	}
	h := s.hash.New()
	h.Write(input)
	digest := h.Sum(nil)
	switch k := s.key.(type) {
	case *ecdsa.PrivateKey:
		// JWS wants r and s as fixed-size big-endian integers, not ASN.1.
		r, sv, err := ecdsa.Sign(rand.Reader, k, digest)
		if err != nil {
			return nil, err
		}
		size := (k.Curve.Params().BitSize + 7) / 8
		out := make([]byte, 2*size)
		r.FillBytes(out[:size])
		sv.FillBytes(out[size:])
		return out, nil
	case *rsa.PrivateKey:
		if strings.HasPrefix(s.alg, "PS") {
			return rsa.SignPSS(rand.Reader, k, s.hash, digest, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		}
		return rsa.SignPKCS1v15(rand.Reader, k, s.hash, digest)
	}
	return nil, fmt.Errorf("no signer for %T", s.key)
}

// keyJWTHandler is an auth.OAuthHandler for the client-credentials grant
// with private_key_jwt client authentication. Discovery is the Go SDK's
// (protected resource metadata, then authorization server metadata, then
// the 2025-03-26 defaults), as its secret-based handler does it.
type keyJWTHandler struct {
	clientID string
	signer   *keySigner
	client   *http.Client

	// mu guards the fields below.
	mu     sync.Mutex
	tokens oauth2.TokenSource
	// granted is the scopes each authorization server granted, so a
	// step-up asks for them again with the new ones.
	granted map[string][]string
}

func newKeyJWTHandler(clientID string, signer *keySigner, client *http.Client) *keyJWTHandler {
	return &keyJWTHandler{clientID: clientID, signer: signer, client: client, granted: map[string][]string{}}
}

func (h *keyJWTHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tokens, nil
}

// Authorize gets a token with a fresh client assertion; the transport
// calls it on a 401, or a 403 asking for more scope.
func (h *keyJWTHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	defer io.Copy(io.Discard, resp.Body)
	prm, asm, scopes, err := discoverAuth(ctx, req, resp, h.client)
	if err != nil {
		return err
	}
	if m := asm.TokenEndpointAuthMethodsSupported; len(m) > 0 && !slices.Contains(m, "private_key_jwt") {
		return fmt.Errorf("the authorization server %s does not take private_key_jwt (it takes %s): use a client_secret", asm.Issuer, strings.Join(m, ", "))
	}
	if a := asm.TokenEndpointAuthSigningAlgValuesSupported; len(a) > 0 && !slices.Contains(a, h.signer.alg) {
		return fmt.Errorf("the authorization server %s takes client assertions signed with %s, not %s: set the oauth signing_alg, or use another key", asm.Issuer, strings.Join(a, ", "), h.signer.alg)
	}
	h.mu.Lock()
	for _, s := range h.granted[asm.Issuer] {
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	h.mu.Unlock()
	src := &assertionTokens{h: h, audience: asm.Issuer, cfg: clientcredentials.Config{
		ClientID: h.clientID, TokenURL: asm.TokenEndpoint, Scopes: scopes, AuthStyle: oauth2.AuthStyleInParams,
	}, resource: prm.Resource}
	tok, err := src.fetch(ctx)
	if err != nil {
		return fmt.Errorf("client credentials token request (private_key_jwt) to %s: %w", asm.TokenEndpoint, err)
	}
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		scopes = strings.Fields(s)
	}
	h.mu.Lock()
	h.tokens, h.granted[asm.Issuer] = oauth2.ReuseTokenSource(tok, src), scopes
	h.mu.Unlock()
	return nil
}

// assertionTokens asks the token endpoint for a token with a new client
// assertion each time: oauth2.ReuseTokenSource calls it when the last
// token expired, long after the assertion the first was got with.
type assertionTokens struct {
	h        *keyJWTHandler
	audience string
	resource string
	cfg      clientcredentials.Config
}

// Token gets a new token when the last one expired. It outlives the
// request that got the first token, so it has no request's ctx.
func (a *assertionTokens) Token() (*oauth2.Token, error) { return a.fetch(context.Background()) }

func (a *assertionTokens) fetch(ctx context.Context) (*oauth2.Token, error) {
	jwt, err := a.h.signer.assertion(a.h.clientID, a.audience, time.Now())
	if err != nil {
		return nil, err
	}
	cfg := a.cfg
	cfg.EndpointParams = url.Values{"client_assertion_type": {assertionType}, "client_assertion": {jwt}}
	if a.resource != "" { // RFC 8707, as MCP asks of every token request
		cfg.EndpointParams.Set("resource", a.resource)
	}
	return cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, a.h.client))
}

// discoverAuth reads the challenge of resp (the server's answer to req)
// and finds the server's protected resource metadata (protectedResource),
// its first authorization server's metadata (the 2025-03-26 default
// endpoints when it has none), and the scopes to ask for: the
// challenge's, else those the resource supports. The grant handlers of
// this package (keyJWTHandler, jwtBearerHandler) all start with it.
func discoverAuth(ctx context.Context, req *http.Request, resp *http.Response, client *http.Client) (*oauthex.ProtectedResourceMetadata, *oauthex.AuthServerMeta, []string, error) {
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading the server's WWW-Authenticate: %w", err)
	}
	prm, err := protectedResource(ctx, challenges, req.URL.String(), client)
	if err != nil {
		return nil, nil, nil, err
	}
	as := prm.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, as, client)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("getting authorization server metadata: %w", err)
	}
	if asm == nil { // 2025-03-26: the default endpoints
		asm = &oauthex.AuthServerMeta{Issuer: as, TokenEndpoint: strings.TrimSuffix(as, "/") + "/token"}
	}
	scopes := challengeScopes(challenges)
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	return prm, asm, scopes, nil
}

// protectedResource finds the server's protected resource metadata (RFC
// 9728) where the MCP spec says to look: the challenge's
// resource_metadata, then the well-known path of the endpoint, then of the
// root; a server with none predates it (2025-03-26), and the root of its
// URL is its authorization server.
func protectedResource(ctx context.Context, challenges []oauthex.Challenge, serverURL string, client *http.Client) (*oauthex.ProtectedResourceMetadata, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, fmt.Errorf("the server's URL: %w", err)
	}
	root := &url.URL{Scheme: u.Scheme, Host: u.Host}
	type try struct{ url, resource string }
	var tries []try
	for _, c := range challenges {
		if m := c.Params["resource_metadata"]; m != "" {
			tries = append(tries, try{m, serverURL})
			break
		}
	}
	tries = append(tries,
		try{root.String() + "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/"), serverURL},
		try{root.String() + "/.well-known/oauth-protected-resource", root.String()})
	for _, t := range tries {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, t.url, t.resource, client)
		if err != nil || prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("the protected resource metadata at %s names no authorization server", t.url)
		}
		return prm, nil
	}
	return &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{root.String()}, Resource: serverURL}, nil
}

// challengeScopes returns the scope a Bearer challenge asks for.
func challengeScopes(challenges []oauthex.Challenge) []string {
	for _, c := range challenges {
		if c.Scheme == "bearer" && c.Params["scope"] != "" {
			return strings.Fields(c.Params["scope"])
		}
	}
	return nil
}

var _ auth.OAuthHandler = (*keyJWTHandler)(nil)
