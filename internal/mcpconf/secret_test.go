package mcpconf

import (
	"errors"
	"strings"
	"testing"
)

// TestExpandKeychain: ${keychain:NAME} is looked up as "keychain:NAME",
// which no variable can shadow; a secret that is not stored says how to
// store it; a secret where a command line or a URL would show it is
// refused, in env and headers it is expanded.
func TestExpandKeychain(t *testing.T) {
	var asked []string
	lookup := func(k string) (string, bool) {
		asked = append(asked, k)
		if k == "keychain:GH" {
			return "ghp_secret", true
		}
		return "", false
	}
	got, err := Expand("Bearer ${keychain:GH}", lookup)
	if err != nil || got != "Bearer ghp_secret" || asked[0] != "keychain:GH" {
		t.Fatalf("Expand = %q, %v (asked %v)", got, err, asked)
	}
	if got, err := Expand("${keychain:NONE:-fallback}", lookup); err != nil || got != "fallback" {
		t.Errorf("a default: %q, %v", got, err)
	}
	_, err = Expand("${keychain:NONE}", lookup)
	var ue *UnsetError
	if !errors.As(err, &ue) || !ue.Secret() || ue.Name != "NONE" ||
		!strings.Contains(err.Error(), "secret NONE is not in nerve's secret store") || !strings.Contains(err.Error(), "`nerve secret set NONE`") {
		t.Errorf("an unset secret: %v", err)
	}
	// Explain does not turn it into advice about environments.
	if msg := Explain(err, "the daemon's").Error(); strings.Contains(msg, "nerve env set") {
		t.Errorf("explained: %s", msg)
	}

	srv := Server{Name: "gh", Transport: "http", URL: "https://h/mcp", Headers: map[string]string{"Authorization": "Bearer ${keychain:GH}"}}
	x, err := srv.Expand(lookup, "")
	if err != nil || x.Headers["Authorization"] != "Bearer ghp_secret" {
		t.Errorf("in a header: %v, %v", x.Headers, err)
	}
	stdio := Server{Name: "fs", Transport: "stdio", Command: []string{"srv"}, Env: map[string]string{"TOKEN": "${keychain:GH}"}}
	if x, err := stdio.Expand(lookup, ""); err != nil || x.Env["TOKEN"] != "ghp_secret" {
		t.Errorf("in env: %v, %v", x.Env, err)
	}
	for _, tc := range []struct {
		srv   Server
		field string
	}{
		{Server{Name: "a", Transport: "stdio", Command: []string{"srv", "--token", "${keychain:GH}"}}, `"args[1]"`},
		{Server{Name: "b", Transport: "stdio", Command: []string{"srv", "--x=${X:-${keychain:GH}}"}}, `"args[0]"`},
		{Server{Name: "c", Transport: "http", URL: "https://h/mcp?key=${keychain:GH}"}, `"url"`},
	} {
		_, err := tc.srv.Expand(lookup, "")
		if err == nil || !strings.Contains(err.Error(), tc.field+": ${keychain:GH} cannot be used here") {
			t.Errorf("server %s: %v; want refused at %s", tc.srv.Name, err, tc.field)
		}
		if err != nil && strings.Contains(err.Error(), "ghp_secret") {
			t.Errorf("the message shows the secret: %v", err)
		}
	}
}
