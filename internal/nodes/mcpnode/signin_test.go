package mcpnode

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/nerve-dev/nerve/pkg/node"
)

// memStore is a TokenStore in memory.
type memStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

var errAbsent = errors.New("absent")

func (s *memStore) Get(k string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[k]
	if !ok {
		return nil, errAbsent
	}
	return b, nil
}

func (s *memStore) Set(k string, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[k] = b
	return nil
}

func (s *memStore) Delete(k string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, k)
	return nil
}

// expiredSignIn stores a sign-in to s whose access token has expired.
func expiredSignIn(t *testing.T, store *memStore, s *oauthServer, refresh string) {
	t.Helper()
	b, _ := json.Marshal(savedSignIn{ClientID: "dyn-client", AuthURL: s.URL + "/authorize", TokenURL: s.URL + "/token", AuthStyle: oauth2.AuthStyleInParams,
		Token: &oauth2.Token{AccessToken: "stale", TokenType: "Bearer", RefreshToken: refresh, Expiry: time.Now().Add(-time.Hour)}})
	store.Set(SignInKey(s.URL+"/mcp"), b)
}

// TestSignInSavedAndRefreshed: a sign-in is saved in the token store and
// a new node (a restarted daemon) uses it without asking; an expired one
// is refreshed with its refresh token, not by asking the person again.
func TestSignInSavedAndRefreshed(t *testing.T) {
	s := newOAuthServer(t)
	store := &memStore{}
	var asked atomic.Int32
	ctx := context.Background()
	start := func() *Node {
		t.Helper()
		n, err := Factory(&Options{Authorize: browser(&asked), Tokens: store})(oauthSpec(s.URL), node.Env{})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(ctx); err != nil {
			t.Fatalf("Start: %v", err)
		}
		t.Cleanup(func() { n.Stop(context.Background()) })
		return n.(*Node)
	}
	start()
	if asked.Load() != 1 {
		t.Fatalf("asked %d times, want 1", asked.Load())
	}
	b, err := store.Get(SignInKey(s.URL + "/mcp"))
	if err != nil || !strings.Contains(string(b), `"access_token":"good-token"`) {
		t.Fatalf("the sign-in was not saved: %s, %v", b, err)
	}
	start() // another daemon
	if asked.Load() != 1 {
		t.Errorf("a new node asked again (%d sign-ins) instead of using the saved one", asked.Load())
	}

	expiredSignIn(t, store, s, "good-refresh")
	n := start()
	if asked.Load() != 1 || s.refreshes.Load() != 1 {
		t.Errorf("an expired sign-in: %d sign-ins, %d refreshes; want 1 and 1", asked.Load(), s.refreshes.Load())
	}
	if res, err := n.CallTool(ctx, &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"text":"refreshed"}`)}); err != nil || text(t, res) != "refreshed" {
		t.Errorf("call after a refresh: %v, %v", res, err)
	}
	if b, _ := store.Get(SignInKey(s.URL + "/mcp")); strings.Contains(string(b), "stale") {
		t.Errorf("the refreshed token was not saved: %s", b)
	}
}

// TestRefusedRefreshNamesTheCommand: when the authorization server refuses
// the refresh token and nobody can sign in, the node says the refresh
// failed and names `nerve node auth`; the refused sign-in is forgotten.
func TestRefusedRefreshNamesTheCommand(t *testing.T) {
	s := newOAuthServer(t)
	store := &memStore{}
	expiredSignIn(t, store, s, "revoked-refresh")
	n, err := Factory(&Options{Tokens: store})(oauthSpec(s.URL), node.Env{})
	if err != nil {
		t.Fatal(err)
	}
	err = n.Start(context.Background())
	if err == nil {
		n.Stop(context.Background())
		t.Fatal("Start succeeded with a revoked refresh token")
	}
	want := "the saved sign-in to " + s.URL + "/mcp expired and refreshing it failed"
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "run `nerve node auth oa` to sign in again") {
		t.Errorf("error %v; want %q and the command", err, want)
	}
	if _, gerr := store.Get(SignInKey(s.URL + "/mcp")); gerr == nil {
		t.Error("the refused sign-in is still stored")
	}
}
