package mcpconf

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/httpretry"
	"github.com/nerve-dev/nerve/pkg/node"
)

func TestSpecRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		server Server
		opts   string
	}{
		{
			name: "stdio",
			server: Server{Name: "fs", Transport: "stdio", Command: []string{"npx", "-y", "${PKG}"}, Cwd: "${HOME}",
				Env: map[string]string{"TOKEN": "${TOKEN}"}, InheritEnv: true, Timeout: 90 * time.Second},
			opts: `{"transport":"stdio","inherit_env":true,"timeout":"1m30s"}`,
		},
		{
			name:   "http",
			server: Server{Name: "api", Transport: "http", URL: "https://x/mcp", Headers: map[string]string{"Authorization": "Bearer ${T}"}},
			opts:   `{"transport":"http","url":"https://x/mcp","headers":{"Authorization":"Bearer ${T}"}}`,
		},
		{
			name:   "sse",
			server: Server{Name: "old", Transport: "sse", URL: "https://x/sse"},
			opts:   `{"transport":"sse","url":"https://x/sse"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.server.Spec("n1")
			if spec.ID != "n1" || spec.Kind != "mcp" || string(spec.Options) != tt.opts {
				t.Errorf("spec = %s %s %s; want options %s", spec.ID, spec.Kind, spec.Options, tt.opts)
			}
			if !reflect.DeepEqual(spec.Command, tt.server.Command) || spec.Cwd != tt.server.Cwd || !reflect.DeepEqual(spec.Env, tt.server.Env) {
				t.Errorf("spec = %+v, want the server's command, cwd and env unexpanded", spec)
			}
			// Through JSON, as the session saves it, and back.
			raw, err := json.Marshal(spec)
			if err != nil {
				t.Fatal(err)
			}
			var saved node.Spec
			if err := json.Unmarshal(raw, &saved); err != nil {
				t.Fatal(err)
			}
			back, _, err := ServerFromSpec(saved)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.server
			want.Name = "n1"
			if !reflect.DeepEqual(back, want) {
				t.Errorf("round trip:\n got %+v\nwant %+v", back, want)
			}
		})
	}
}

func TestSpecIsACopy(t *testing.T) {
	s := Server{Name: "a", Transport: "stdio", Command: []string{"x"}, Env: map[string]string{"A": "1"}}
	spec := s.Spec("a")
	spec.Command[0], spec.Env["A"] = "y", "2"
	if s.Command[0] != "x" || s.Env["A"] != "1" {
		t.Errorf("changing the spec changed the server: %+v", s)
	}
}

func TestServerFromSpecErrors(t *testing.T) {
	tests := []struct {
		spec node.Spec
		want string
	}{
		{node.Spec{ID: "b", Kind: "bash"}, `node "b" is a bash node, not an mcp node`},
		{node.Spec{ID: "m", Kind: "mcp", Options: json.RawMessage(`{"transport":"ws","url":"x"}`)}, `mcp node "m": unknown transport "ws": use "stdio", "http" or "sse"`},
		{node.Spec{ID: "m", Kind: "mcp", Options: json.RawMessage(`{"transport":"stdio"}`)}, `mcp node "m": a stdio server needs a command`},
		{node.Spec{ID: "m", Kind: "mcp", Options: json.RawMessage(`{"transport":"http"}`)}, `mcp node "m": an http server needs a url`},
		{node.Spec{ID: "m", Kind: "mcp", Command: []string{"x"}, Options: json.RawMessage(`{"transprt":"stdio"}`)}, `options of mcp node "m": json: unknown field "transprt"`},
		{node.Spec{ID: "m", Kind: "mcp", Options: json.RawMessage(`{"url":"https://h/sse","oauth":{}}`)}, `mcp node "m": oauth is for the http transport, not sse: remove the oauth options, or use the server's streamable HTTP URL`},
		{node.Spec{ID: "m", Kind: "mcp", Options: json.RawMessage(`{"url":"https://h/mcp","oauth":{"client_secret":"s"}}`)}, `mcp node "m": oauth client_secret needs the client_id it belongs to`},
		{node.Spec{ID: "m", Kind: "mcp", Options: json.RawMessage(`{"url":"https://h/mcp","oauth":{"client_metadata_url":"http://me/c.json"}}`)}, `mcp node "m": oauth client_metadata_url "http://me/c.json" must be an https URL with a path`},
		{node.Spec{ID: "m", Kind: "mcp", Options: json.RawMessage(`{"url":"https://h/mcp","oauth":{"client":"x"}}`)}, `options of mcp node "m": json: unknown field "client"`},
	}
	for _, tt := range tests {
		_, _, err := ServerFromSpec(tt.spec)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ServerFromSpec(%+v) = %v\nwant %s", tt.spec, err, tt.want)
		}
	}
}

func TestServerFromSpecInfersTransport(t *testing.T) {
	for _, tt := range []struct {
		spec node.Spec
		want string
	}{
		{node.Spec{ID: "a", Kind: "mcp", Command: []string{"x"}}, "stdio"},
		{node.Spec{ID: "a", Kind: "mcp", Options: json.RawMessage(`{"url":"https://h/sse"}`)}, "sse"},
		{node.Spec{ID: "a", Kind: "mcp", Options: json.RawMessage(`{"url":"https://h/mcp"}`)}, "http"},
	} {
		s, _, err := ServerFromSpec(tt.spec)
		if err != nil || s.Transport != tt.want {
			t.Errorf("ServerFromSpec(%s) transport = %q, %v; want %q", tt.spec.Options, s.Transport, err, tt.want)
		}
	}
}

func TestOAuthOptions(t *testing.T) {
	spec := node.Spec{ID: "gh", Kind: "mcp", Options: json.RawMessage(`{"url":"https://h/mcp","oauth":{
		"client_id":"nerve","client_secret":"${GH_SECRET}","client_metadata_url":"https://nerve.dev/client.json",
		"scopes":["repo","read:user"],"redirect_url":"http://127.0.0.1:7591/callback"}}`)}
	_, o, err := ServerFromSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := &OAuth{ClientID: "nerve", ClientSecret: "${GH_SECRET}", ClientMetadataURL: "https://nerve.dev/client.json",
		Scopes: []string{"repo", "read:user"}, RedirectURL: "http://127.0.0.1:7591/callback"}
	if !reflect.DeepEqual(o.OAuth, want) {
		t.Errorf("OAuth = %+v\nwant %+v", o.OAuth, want)
	}
	// Saved as written: the secret stays a reference.
	raw, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"client_secret":"${GH_SECRET}"`) {
		t.Errorf("saved options %s, want the secret unexpanded", raw)
	}
	// No oauth options: nil, and nothing saved.
	_, o, err = ServerFromSpec(node.Spec{ID: "a", Kind: "mcp", Options: json.RawMessage(`{"url":"https://h/mcp"}`)})
	if err != nil || o.OAuth != nil {
		t.Errorf("without oauth: %+v, %v", o.OAuth, err)
	}
}

func TestOAuthGrantChecked(t *testing.T) {
	for opts, want := range map[string]string{
		`{"transport":"http","url":"https://h/mcp","oauth":{"grant":"password"}}`:                                                  "use authorization_code (a person signs in), client_credentials (client_id with client_secret or a private key, no person), jwt_bearer (a workload's JWT) or enterprise",
		`{"transport":"http","url":"https://h/mcp","oauth":{"grant":"client_credentials","client_id":"c"}}`:                        "needs client_id and client_secret",
		`{"transport":"http","url":"https://h/mcp","oauth":{"grant":"client_credentials","client_id":"c","client_secret":"${S}"}}`: "",
		// private_key_jwt (RFC 7523): a key instead of a secret.
		`{"transport":"http","url":"https://h/mcp","oauth":{"grant":"client_credentials","client_id":"c","private_key":"${KEY}"}}`:                                "",
		`{"transport":"http","url":"https://h/mcp","oauth":{"grant":"client_credentials","client_id":"c","private_key_file":"/etc/k.pem","signing_alg":"PS256"}}`: "",
		`{"transport":"http","url":"https://h/mcp","oauth":{"grant":"client_credentials","client_id":"c","private_key_file":"${HOME}/k.pem"}}`:                    "",
		`{"transport":"http","url":"https://h/mcp","oauth":{"grant":"client_credentials","private_key":"${KEY}"}}`:                                                "needs client_id and client_secret",
		`{"transport":"http","url":"https://h/mcp","oauth":{"grant":"client_credentials","client_id":"c","client_secret":"s","private_key":"${K}"}}`:              "give one of client_secret, private_key and private_key_file, not 2",
		`{"transport":"http","url":"https://h/mcp","oauth":{"client_id":"c","private_key":"${KEY}"}}`:                                                             `private_key and private_key_file are for "grant": "client_credentials"`,
		`{"transport":"http","url":"https://h/mcp","oauth":{"grant":"client_credentials","client_id":"c","private_key":"/home/me/k.pem"}}`:                        "private_key holds the PEM text itself",
		`{"transport":"http","url":"https://h/mcp","oauth":{"grant":"client_credentials","client_id":"c","private_key_file":"k.pem"}}`:                            `private_key_file "k.pem" must be an absolute path`,
		`{"transport":"http","url":"https://h/mcp","oauth":{"grant":"client_credentials","client_id":"c","private_key":"${K}","signing_alg":"HS256"}}`:            `signing_alg "HS256": use one of RS256`,
		`{"transport":"http","url":"https://h/mcp","oauth":{"grant":"client_credentials","client_id":"c","client_secret":"s","signing_alg":"ES256"}}`:             "signing_alg \"ES256\" needs private_key or private_key_file",
	} {
		_, _, err := ServerFromSpec(node.Spec{ID: "x", Kind: Kind, Options: json.RawMessage(opts)})
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v; want %q", opts, err, want)
		}
	}
}

// TestRetryOption: the retry option is read from the spec, checked, and
// fills only the fields it sets over a kind's defaults.
func TestRetryOption(t *testing.T) {
	spec := func(opts string) node.Spec {
		return node.Spec{ID: "r", Kind: Kind, Options: json.RawMessage(opts)}
	}
	_, o, err := ServerFromSpec(spec(`{"url":"https://h/mcp","retry":{"attempts":5,"base":"1s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	def := httpretry.Policy{Attempts: 3, Base: time.Millisecond, Max: time.Minute}
	if got := o.Retry.Over(def); got.Attempts != 5 || got.Base != time.Second || got.Max != time.Minute {
		t.Errorf("Over = %+v; want attempts 5, base 1s, max kept", got)
	}
	if got := (*Retry)(nil).Over(def); got.Attempts != 3 {
		t.Errorf("nil Over = %+v; want the defaults", got)
	}
	for opts, want := range map[string]string{
		`{"url":"https://h/mcp","retry":{"attempts":-1}}`:           "retry attempts -1",
		`{"url":"https://h/mcp","retry":{"base":"10s","max":"1s"}}`: "retry base 10s is over max 1s",
		`{"transport":"stdio","retry":{"attempts":2}}`:              "retry is for http and sse servers",
		`{"url":"https://h/mcp","retry":{"attempts":1000}}`:         "from 1 (never retry) to 100",
	} {
		sp := spec(opts)
		if strings.Contains(opts, "stdio") {
			sp.Command = []string{"server"}
		}
		if _, _, err := ServerFromSpec(sp); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", opts, err, want)
		}
	}
}
