package mcpnode

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// migratingServer is an MCP server whose authorization server can move:
// two authorization servers, /as1 and /as2, on its host; the protected
// resource metadata names one of them, and the server takes only the
// tokens of the one it names.
type migratingServer struct {
	*httptest.Server
	current atomic.Int32 // 1 or 2

	mu sync.Mutex
	// seen[n] lists what authorization server n was sent: its client
	// ids, refresh tokens and grants, as "what=value".
	seen map[int][]string
}

func (s *migratingServer) saw(as int, what string) {
	s.mu.Lock()
	s.seen[as] = append(s.seen[as], what)
	s.mu.Unlock()
}

func (s *migratingServer) sent(as int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen[as])
}

func newMigratingServer(t *testing.T) *migratingServer {
	s := &migratingServer{seen: map[int][]string{}}
	s.current.Store(1)
	mux := http.NewServeMux()
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newTestServer() }, nil)
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if want := "Bearer as" + string(rune('0'+s.current.Load())) + "-token"; r.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+s.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": s.URL + "/mcp", "authorization_servers": []string{s.URL + "/as" + string(rune('0'+s.current.Load()))}})
	})
	for _, n := range []int{1, 2} {
		name := "as" + string(rune('0'+n))
		iss := func() string { return s.URL + "/" + name }
		mux.HandleFunc("/.well-known/oauth-authorization-server/"+name, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, map[string]any{
				"issuer": iss(), "authorization_endpoint": iss() + "/authorize", "token_endpoint": iss() + "/token",
				"registration_endpoint": iss() + "/register", "response_types_supported": []string{"code"},
				"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
			})
		})
		mux.HandleFunc("/"+name+"/register", func(w http.ResponseWriter, r *http.Request) {
			var md map[string]any
			json.NewDecoder(r.Body).Decode(&md)
			s.saw(n, "register")
			s.saw(n, "application_type="+toString(md["application_type"]))
			writeJSON(w, 201, map[string]any{"client_id": name + "-client", "redirect_uris": md["redirect_uris"]})
		})
		mux.HandleFunc("/"+name+"/authorize", func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			s.saw(n, "client_id="+q.Get("client_id"))
			back, _ := url.Parse(q.Get("redirect_uri"))
			v := back.Query()
			v.Set("code", name+"-code")
			v.Set("state", q.Get("state"))
			back.RawQuery = v.Encode()
			http.Redirect(w, r, back.String(), http.StatusFound)
		})
		mux.HandleFunc("/"+name+"/token", func(w http.ResponseWriter, r *http.Request) {
			r.ParseForm()
			s.saw(n, "client_id="+r.PostForm.Get("client_id"))
			s.saw(n, "grant_type="+r.PostForm.Get("grant_type"))
			if rt := r.PostForm.Get("refresh_token"); rt != "" {
				s.saw(n, "refresh_token="+rt)
			}
			writeJSON(w, 200, map[string]any{"access_token": name + "-token", "token_type": "Bearer", "expires_in": 3600, "refresh_token": name + "-refresh"})
		})
	}
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}

// TestAuthorizationServerMigration: a sign-in is kept with its issuer.
// When the server moves to another authorization server, nerve registers
// with the new one and signs in there; the old one's client, tokens and
// refresh token are never shown to the new one, and what is saved is the
// new issuer's sign-in (SEP-2352; conformance auth/authorization-server-
// migration). Dynamic registration says nerve is a native application.
func TestAuthorizationServerMigration(t *testing.T) {
	s := newMigratingServer(t)
	store := &memStore{}
	var asked atomic.Int32
	start := func() {
		t.Helper()
		n, err := Factory(&Options{Authorize: browser(&asked), Tokens: store})(oauthSpec(s.URL), node.Env{})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer n.Stop(ctx)
		if res, err := n.CallTool(ctx, &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"text":"ok"}`)}); err != nil || text(t, res) != "ok" {
			t.Fatalf("echo: %v, %v", res, err)
		}
	}
	saved := func() savedSignIn {
		t.Helper()
		var si savedSignIn
		b, err := store.Get(SignInKey(s.URL + "/mcp"))
		if err != nil || json.Unmarshal(b, &si) != nil {
			t.Fatalf("no sign-in saved: %s, %v", b, err)
		}
		return si
	}
	start()
	if si := saved(); si.Issuer != s.URL+"/as1" || si.ClientID != "as1-client" {
		t.Errorf("saved %+v, want the sign-in at as1", si)
	}
	if got := s.sent(1); !slices.Contains(got, "application_type=native") {
		t.Errorf("registration at as1: %v, want application_type native", got)
	}

	s.current.Store(2)
	start()
	if si := saved(); si.Issuer != s.URL+"/as2" || si.ClientID != "as2-client" || si.Token.RefreshToken != "as2-refresh" {
		t.Errorf("after the move saved %+v, want the sign-in at as2", si)
	}
	as2 := s.sent(2)
	if !slices.Contains(as2, "register") {
		t.Errorf("nerve did not register with the new authorization server: %v", as2)
	}
	for _, what := range as2 {
		if strings.Contains(what, "as1-") {
			t.Errorf("the new authorization server was sent %q, of the old one's sign-in (all: %v)", what, as2)
		}
	}
	if asked.Load() != 2 {
		t.Errorf("the person signed in %d times, want once at each authorization server", asked.Load())
	}
}
