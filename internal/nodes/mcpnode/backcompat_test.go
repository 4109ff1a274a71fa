package mcpnode

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// legacyServer is an MCP server of spec 2025-03-26: its 401 names no
// resource metadata, and its authorization server lives under /oauth on
// the same host, described by metadata at the root that names issuer
// (by default URL/oauth). With prm it also serves protected resource
// metadata at the root naming the root as its authorization server.
type legacyServer struct {
	*httptest.Server
	issuer func() string
	prm    bool
	tokens atomic.Int32
}

func newLegacyServer(t *testing.T, prm bool, issuer func(base string) string) *legacyServer {
	t.Helper()
	s := &legacyServer{prm: prm}
	s.issuer = func() string { return issuer(s.URL) }
	mux := http.NewServeMux()
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newTestServer() }, nil)
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer legacy-token" {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource", func(w http.ResponseWriter, r *http.Request) {
		if !s.prm {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, 200, map[string]any{"resource": s.URL, "authorization_servers": []string{s.URL}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{
			"issuer": s.issuer(), "authorization_endpoint": s.URL + "/oauth/authorize", "token_endpoint": s.URL + "/oauth/token",
			"registration_endpoint": s.URL + "/oauth/register", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
			"authorization_response_iss_parameter_supported": true,
		})
	})
	mux.HandleFunc("/oauth/register", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusCreated, map[string]any{"client_id": "legacy-client", "redirect_uris": []string{DefaultRedirectURL}})
	})
	mux.HandleFunc("/oauth/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		back, _ := url.Parse(q.Get("redirect_uri"))
		v := url.Values{"code": {"legacy-code"}, "state": {q.Get("state")}, "iss": {s.issuer()}}
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("/oauth/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.PostForm.Get("code") != "legacy-code" || r.PostForm.Get("code_verifier") == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant"})
			return
		}
		s.tokens.Add(1)
		writeJSON(w, 200, map[string]any{"access_token": "legacy-token", "token_type": "Bearer", "expires_in": 3600})
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// browserWithIss is browser (oauth_test.go) passing on the iss of the
// redirect (RFC 9207).
func browserWithIss(ctx context.Context, id string, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, err
	}
	q := loc.Query()
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

func TestOAuthServerOf20250326(t *testing.T) {
	sub := func(base string) string { return base + "/oauth" }
	for _, tt := range []struct {
		name    string
		prm     bool
		issuer  func(base string) string
		wantErr string // empty: the sign-in works
	}{
		// The spec's case: no protected resource metadata, metadata at the
		// root naming an issuer under it; the sign-in uses its endpoints
		// and the iss of the redirect, which names that issuer.
		{name: "issuer under the root", issuer: sub},
		{name: "issuer is the root", issuer: func(base string) string { return base }},
		// Not weakened: metadata naming another origin is refused ...
		{name: "issuer on another origin", issuer: func(string) string { return "https://elsewhere.example/oauth" },
			wantErr: `metadata issuer "https://elsewhere.example/oauth" does not match issuer URL`},
		// ... and so is any mismatch on a server that has protected
		// resource metadata (RFC 8414 §3.3 as the SDK applies it).
		{name: "protected resource metadata", prm: true, issuer: sub, wantErr: "does not match issuer URL"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newLegacyServer(t, tt.prm, tt.issuer)
			n, err := Factory(&Options{Authorize: browserWithIss})(oauthSpec(s.URL), node.Env{})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			err = n.Start(ctx)
			t.Cleanup(func() { n.Stop(context.Background()) })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("start: %v; want an error saying %q", err, tt.wantErr)
				}
				if s.tokens.Load() != 0 {
					t.Errorf("a token was issued although discovery should have failed")
				}
				return
			}
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			res, err := n.CallTool(ctx, &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"text":"old server"}`)})
			if err != nil || text(t, res) != "old server" {
				t.Fatalf("echo after sign-in: %v, %v", res, err)
			}
			if got := s.tokens.Load(); got != 1 {
				t.Errorf("%d tokens issued, want 1", got)
			}
		})
	}
}
