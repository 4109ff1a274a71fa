package mcpnode

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// oauthServer is an MCP server behind a minimal OAuth 2.1 authorization
// server on one host: protected resource metadata, authorization server
// metadata, dynamic registration, an authorization endpoint that approves
// at once, and a token endpoint.
type oauthServer struct {
	*httptest.Server
	mu        sync.Mutex
	authorize url.Values // the last authorization request
	token     url.Values // the last token request
	tokens    atomic.Int32
	refreshes atomic.Int32
}

func newOAuthServer(t *testing.T) *oauthServer {
	t.Helper()
	s := &oauthServer{}
	mux := http.NewServeMux()
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newTestServer() }, nil)
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good-token" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+s.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": s.URL + "/mcp", "authorization_servers": []string{s.URL}, "scopes_supported": []string{"tools"}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{
			"issuer": s.URL, "authorization_endpoint": s.URL + "/authorize", "token_endpoint": s.URL + "/token",
			"registration_endpoint": s.URL + "/register", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
		})
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		var md map[string]any
		json.NewDecoder(r.Body).Decode(&md)
		writeJSON(w, 201, map[string]any{"client_id": "dyn-client", "redirect_uris": md["redirect_uris"]})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		s.mu.Lock()
		s.authorize = q
		s.mu.Unlock()
		back, _ := url.Parse(q.Get("redirect_uri"))
		v := back.Query()
		v.Set("code", "the-code")
		v.Set("state", q.Get("state"))
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		s.mu.Lock()
		s.token = r.PostForm
		s.mu.Unlock()
		if r.PostForm.Get("grant_type") == "refresh_token" {
			if r.PostForm.Get("refresh_token") != "good-refresh" {
				writeJSON(w, 400, map[string]any{"error": "invalid_grant", "error_description": "refresh token revoked"})
				return
			}
			s.refreshes.Add(1)
			writeJSON(w, 200, map[string]any{"access_token": "good-token", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "good-refresh"})
			return
		}
		if r.PostForm.Get("code") != "the-code" || r.PostForm.Get("code_verifier") == "" {
			writeJSON(w, 400, map[string]any{"error": "invalid_grant"})
			return
		}
		s.tokens.Add(1)
		writeJSON(w, 200, map[string]any{"access_token": "good-token", "token_type": "Bearer", "expires_in": 3600})
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// writeJSON answers v as JSON with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// browser approves as the authorization server's page would, by
// following the authorization URL up to the redirect back to nerve.
func browser(calls *atomic.Int32) Authorizer {
	return func(ctx context.Context, id string, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		calls.Add(1)
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
		return &auth.AuthorizationResult{Code: loc.Query().Get("code"), State: loc.Query().Get("state")}, nil
	}
}

func oauthSpec(url string) node.Spec {
	return node.Spec{ID: "oa", Kind: Kind, Options: json.RawMessage(`{"transport":"http","url":"` + url + `/mcp"}`)}
}

func TestOAuthWithoutAuthorizerSaysWhatToRun(t *testing.T) {
	s := newOAuthServer(t)
	n, err := Factory(nil)(oauthSpec(s.URL), node.Env{})
	if err != nil {
		t.Fatal(err)
	}
	err = n.Start(context.Background())
	if err == nil {
		n.Stop(context.Background())
		t.Fatal("Start succeeded without authorization")
	}
	want := "the server at " + s.URL + "/mcp needs you to sign in (OAuth) before nerve may use it: run `nerve node auth oa` to authorize nerve in a browser"
	if info := n.Info(); info.State != node.Error || !strings.Contains(info.Error, want) || !strings.Contains(err.Error(), want) {
		t.Errorf("state %s, reason %q, error %v; want ERROR saying %q", info.State, info.Error, err, want)
	}
}

func TestOAuthAuthorizationCodeFlow(t *testing.T) {
	s := newOAuthServer(t)
	var calls atomic.Int32
	n, err := Factory(&Options{Authorize: browser(&calls)})(oauthSpec(s.URL), node.Env{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop(context.Background()) })
	res, err := n.CallTool(ctx, &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"text":"signed in"}`)})
	if err != nil || text(t, res) != "signed in" {
		t.Fatalf("echo after sign-in: %v, %v", res, err)
	}
	s.mu.Lock()
	a, tok := s.authorize, s.token
	s.mu.Unlock()
	for k, want := range map[string]string{
		"client_id": "dyn-client", "redirect_uri": DefaultRedirectURL, "code_challenge_method": "S256",
		"resource": s.URL + "/mcp", "scope": "tools", "response_type": "code",
	} {
		if got := a.Get(k); got != want {
			t.Errorf("authorization request %s = %q, want %q", k, got, want)
		}
	}
	if a.Get("code_challenge") == "" || a.Get("state") == "" {
		t.Errorf("authorization request without PKCE challenge or state: %v", a)
	}
	if tok.Get("resource") != s.URL+"/mcp" {
		t.Errorf("token request resource = %q, want the server's URL", tok.Get("resource"))
	}
	// A restart keeps the token: no second sign-in.
	if err := n.(*Node).Restart(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("the person was asked to sign in %d times, want once", got)
	}
}
