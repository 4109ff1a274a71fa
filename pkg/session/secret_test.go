package session_test

import (
	"context"
	"testing"

	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// TestSecretLookup: a node's ${keychain:NAME} is answered by the session's
// Secret alone — not by the environment of the client that added the node,
// which could hold a variable of that name — and is not in the
// environment the node gives its processes.
func TestSecretLookup(t *testing.T) {
	fs := &fakes{}
	s := newSession(t, fs, &session.Options{Secret: func(name string) (string, bool) {
		if name == "GH" {
			return "ghp_real", true
		}
		return "", false
	}})
	ctx := session.WithClientEnv(context.Background(), []string{"keychain:GH=spoofed", "keychain:OTHER=spoofed", "HOME=/h"})
	if _, err := s.Add(ctx, node.Spec{ID: "f", Kind: "fake"}); err != nil {
		t.Fatal(err)
	}
	env := fs.nodes["f"].env
	if v, ok := env.Lookup("keychain:GH"); !ok || v != "ghp_real" {
		t.Errorf("Lookup(keychain:GH) = %q, %v", v, ok)
	}
	if v, ok := env.Lookup("keychain:OTHER"); ok {
		t.Errorf("Lookup(keychain:OTHER) = %q; a client's variable stood in for a secret", v)
	}
	if v, ok := env.Lookup("HOME"); !ok || v != "/h" {
		t.Errorf("Lookup(HOME) = %q, %v", v, ok)
	}
	for _, kv := range env.Environ() {
		if kv == "keychain:GH=ghp_real" {
			t.Errorf("the process environment holds the secret")
		}
	}
}
