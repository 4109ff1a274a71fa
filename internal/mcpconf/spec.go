package mcpconf

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nerve-dev/nerve/internal/httpretry"
	"github.com/nerve-dev/nerve/pkg/node"
)

// Kind is the node kind of an MCP server.
const Kind = "mcp"

// Options are the kind-specific settings of an "mcp" node (node.Spec.Options).
// The mcp node kind decodes them with Spec.DecodeOptions.
type Options struct {
	// Transport is "stdio", "http" or "sse".
	Transport string `json:"transport"`
	// URL and Headers are for http and sse; values may hold ${VAR}.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// InheritEnv passes nerve's whole environment to a stdio server.
	InheritEnv bool `json:"inherit_env,omitempty"`
	// Timeout bounds each call; zero means the node's default.
	Timeout node.Duration `json:"timeout,omitempty"`
	// StartTimeout bounds the start (connect, initialize, listing); zero
	// means the node's default (30 s). A server that downloads itself on
	// its first run (npx -y) may need minutes.
	StartTimeout node.Duration `json:"start_timeout,omitempty"`
	// Ping is how often an idle stdio server is pinged to find it hung: a
	// duration, or "off"; empty means the mcp kind's default (30 s).
	Ping string `json:"ping,omitempty"`
	// Protocol is the MCP protocol version the node speaks: "auto" (or
	// empty: the newest both sides speak, found as the mcp kind
	// negotiates), or a version to ask for ("2025-11-25", "2026-07-28").
	Protocol string `json:"protocol,omitempty"`
	// Roots are the folders offered to the server as MCP roots.
	Roots []string `json:"roots,omitempty"`
	// Restart is the node's restart policy (defined by the mcp node kind).
	Restart string `json:"restart,omitempty"`
	// Start is "eager" (start with the session) or "lazy" (with a tool
	// catalogue, start on the first call); empty: lazy for a stdio server
	// with a catalogue, eager otherwise.
	Start string `json:"start,omitempty"`
	// Idle, if set, stops the server after that long without a call; the
	// next call starts it again.
	Idle node.Duration `json:"idle,omitempty"`
	// Retry tunes the retries of an http or sse server's requests that
	// it turned away (internal/httpretry); nil keeps the defaults.
	Retry *Retry `json:"retry,omitempty"`
	// OAuth tunes OAuth authorization of an http server. Without it the node
	// still answers a server's 401 with discovery and dynamic client
	// registration; set it for a pre-registered client, a client ID
	// metadata document, fixed scopes or another redirect URL.
	OAuth *OAuth `json:"oauth,omitempty"`
	// RequireTools fails the start when the server's tools/list fails;
	// without it the node runs with no tools and a warning (issue 27).
	RequireTools bool `json:"require_tools,omitempty"`
	// Source is where `nerve mcp import` read the server (file, line,
	// name): the node's errors name it. Not a setting: an import compares
	// specs without it, and `nerve mcp export` leaves it out.
	Source *Source `json:"source,omitempty"`
}

// OAuth is the OAuth 2.1 client configuration of an "mcp" node (MCP
// authorization, spec 2025-11-25). String values may hold ${VAR}, expanded
// at each start: keep a client secret out of the saved spec with
// "client_secret": "${MY_SECRET}".
type OAuth struct {
	// ClientID and ClientSecret are a client registered beforehand with
	// the authorization server; an empty secret means a public client.
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	// ClientMetadataURL is an https URL serving this client's metadata
	// document, used as its client_id where the server supports that.
	ClientMetadataURL string `json:"client_metadata_url,omitempty"`
	// Scopes replaces the scopes the server asks for; empty means those
	// the server names in its challenge or metadata.
	Scopes []string `json:"scopes,omitempty"`
	// RedirectURL is where the authorization server sends the browser
	// back; empty means the mcp node kind's default.
	RedirectURL string `json:"redirect_url,omitempty"`
	// Grant is "authorization_code" (the default: a person signs in),
	// "client_credentials" (machines and CI: ClientID and ClientSecret,
	// or ClientID and a private key, get the token, nobody signs in; the
	// OAuth client-credentials extension, SEP-1046), "jwt_bearer" (a
	// workload's identity: the JWT its platform gives it is the grant,
	// RFC 7523; SEP-1933) or "enterprise" (enterprise-managed
	// authorization, SEP-990: the person's ID token at the enterprise's
	// identity provider is exchanged for the grant).
	Grant string `json:"grant,omitempty"`
	// Assertion and AssertionFile are the JWT of grant jwt_bearer: the
	// text itself (usually "${ACTIONS_ID_TOKEN}"), or the absolute path
	// of a file that holds it, read again at each token request (a
	// Kubernetes projected service account token is renewed there).
	Assertion     string `json:"assertion,omitempty"`
	AssertionFile string `json:"assertion_file,omitempty"`
	// IdPIssuer, IdPClientID and IdPClientSecret are the enterprise
	// identity provider of grant enterprise and nerve's client there (a
	// public client without a secret); ClientID and ClientSecret are
	// nerve's client at the MCP server's authorization server.
	IdPIssuer       string `json:"idp_issuer,omitempty"`
	IdPClientID     string `json:"idp_client_id,omitempty"`
	IdPClientSecret string `json:"idp_client_secret,omitempty"`
	// IdPTokenEndpoint is the identity provider's token endpoint, where
	// the ID token is exchanged; empty: found in its metadata (which the
	// Go SDK reads only from a provider that offers PKCE).
	IdPTokenEndpoint string `json:"idp_token_endpoint,omitempty"`
	// IDToken is the person's ID token for grant enterprise, when one is
	// at hand ("${ID_TOKEN}"); without it the person signs in to the
	// identity provider in a browser (`nerve node auth`).
	IDToken string `json:"id_token,omitempty"`
	// PrivateKey and PrivateKeyFile are the client's private key, PEM
	// (PKCS #8, SEC 1 or PKCS #1), for client_credentials with
	// private_key_jwt client authentication (RFC 7523): the PEM text
	// itself (usually "${MY_KEY}") or the absolute path of a file that
	// holds it. At most one of them and ClientSecret.
	PrivateKey     string `json:"private_key,omitempty"`
	PrivateKeyFile string `json:"private_key_file,omitempty"`
	// SigningAlg is the JWS algorithm of the client assertion (RS256,
	// RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA);
	// empty means the key's own: ES256/ES384/ES512 by curve, RS256 for
	// RSA, EdDSA for Ed25519.
	SigningAlg string `json:"signing_alg,omitempty"`
}

// Retry is how a node retries an HTTP request its server or a gateway
// turned away (429, 502, 503, 504): the mcp kind's and the llm kind's
// option "retry". Zero fields keep the kind's defaults.
type Retry struct {
	// Attempts is how many tries in all, the first included (1: never
	// retry).
	Attempts int `json:"attempts,omitempty"`
	// Base is the wait before the first retry when the server names no
	// Retry-After; each later wait doubles (with ±25 % jitter).
	Base node.Duration `json:"base,omitempty"`
	// Max caps every wait: a server whose Retry-After asks for longer is
	// not waited for, and the call fails saying so.
	Max node.Duration `json:"max,omitempty"`
}

// Over returns def with the fields r sets; r may be nil.
func (r *Retry) Over(def httpretry.Policy) httpretry.Policy {
	if r == nil {
		return def
	}
	if r.Attempts > 0 {
		def.Attempts = r.Attempts
	}
	if r.Base > 0 {
		def.Base = time.Duration(r.Base)
	}
	if r.Max > 0 {
		def.Max = time.Duration(r.Max)
	}
	return def
}

// Check refuses settings that cannot work, saying what would.
func (r *Retry) Check() error {
	switch {
	case r == nil:
		return nil
	case r.Attempts < 0 || r.Attempts > 100:
		return fmt.Errorf("retry attempts %d: give the tries in all, from 1 (never retry) to 100", r.Attempts)
	case r.Base < 0 || r.Max < 0:
		return errors.New("retry base and max are durations such as 250ms or 10s, not negative")
	case r.Max > 0 && r.Base > r.Max:
		return fmt.Errorf("retry base %v is over max %v: the first wait cannot be longer than the cap", time.Duration(r.Base), time.Duration(r.Max))
	}
	return nil
}

// SigningAlgs are the values OAuth.SigningAlg may take.
var SigningAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Spec returns the spec of an "mcp" node with id that runs s. s is kept as
// written, ${VAR} references included: specs are saved unexpanded.
func (s Server) Spec(id string) node.Spec {
	c := s.clone()
	opts := Options{
		Transport:  c.Transport,
		URL:        c.URL,
		Headers:    c.Headers,
		InheritEnv: c.InheritEnv,
		Timeout:    node.Duration(c.Timeout),

		StartTimeout: node.Duration(c.StartTimeout),
		Source:       c.Source,
	}
	// Marshalling strings, a map of strings, a bool and a number cannot fail.
	raw, _ := json.Marshal(opts)
	// A server its file turns off is added stopped (node.Spec.Stopped).
	return node.Spec{ID: id, Kind: Kind, Command: c.Command, Cwd: c.Cwd, Env: c.Env, Options: raw, Stopped: c.Disabled}
}

// ServerFromSpec is the reverse of Server.Spec: the server an "mcp" node's
// spec describes (named after the node), and its options.
func ServerFromSpec(spec node.Spec) (Server, Options, error) {
	var o Options
	if spec.Kind != Kind {
		return Server{}, o, fmt.Errorf("node %q is a %s node, not an %s node", spec.ID, spec.Kind, Kind)
	}
	if err := spec.DecodeOptions(&o); err != nil {
		return Server{}, o, err
	}
	c := spec.Clone()
	s := Server{
		Name: spec.ID, Transport: o.Transport, Command: c.Command, Cwd: c.Cwd, Env: c.Env,
		URL: o.URL, Headers: cloneMap(o.Headers), InheritEnv: o.InheritEnv, Timeout: time.Duration(o.Timeout),
		StartTimeout: time.Duration(o.StartTimeout), Disabled: spec.Stopped, Source: o.Source,
	}
	if s.Transport == "" {
		switch {
		case len(s.Command) > 0:
			s.Transport = "stdio"
		case isSSEURL(s.URL):
			s.Transport = "sse"
		default:
			s.Transport = "http"
		}
	}
	switch {
	case s.Transport != "stdio" && s.Transport != "http" && s.Transport != "sse":
		return Server{}, o, fmt.Errorf("mcp node %q: unknown transport %q: use \"stdio\", \"http\" or \"sse\"", spec.ID, s.Transport)
	case s.Transport == "stdio" && len(s.Command) == 0:
		return Server{}, o, fmt.Errorf("mcp node %q: a stdio server needs a command", spec.ID)
	case s.Transport != "stdio" && s.URL == "":
		return Server{}, o, fmt.Errorf("mcp node %q: an %s server needs a url", spec.ID, s.Transport)
	case o.OAuth != nil && s.Transport != "http":
		return Server{}, o, fmt.Errorf("mcp node %q: oauth is for the http transport, not %s: remove the oauth options, or use the server's streamable HTTP URL", spec.ID, s.Transport)
	case o.OAuth != nil:
		if err := o.OAuth.check(); err != nil {
			return Server{}, o, fmt.Errorf("mcp node %q: %w", spec.ID, err)
		}
	}
	if err := s.checkSecretPlaces(); err != nil {
		return Server{}, o, fmt.Errorf("mcp node %q: %s: %w", spec.ID, err.field, err)
	}
	if o.Retry != nil && s.Transport == "stdio" {
		return Server{}, o, fmt.Errorf("mcp node %q: retry is for http and sse servers, whose requests a server or gateway may turn away; remove it", spec.ID)
	}
	if err := o.Retry.Check(); err != nil {
		return Server{}, o, fmt.Errorf("mcp node %q: %w", spec.ID, err)
	}
	return s, o, nil
}

// check refuses oauth options that cannot work, saying what would.
func (o *OAuth) check() error {
	credentials := 0
	for _, v := range []string{o.ClientSecret, o.PrivateKey, o.PrivateKeyFile} {
		if v != "" {
			credentials++
		}
	}
	key := o.PrivateKey != "" || o.PrivateKeyFile != ""
	switch {
	case !slices.Contains([]string{"", "authorization_code", "client_credentials", "jwt_bearer", "enterprise"}, o.Grant):
		return fmt.Errorf("oauth grant %q: use authorization_code (a person signs in), client_credentials (client_id with client_secret or a private key, no person), jwt_bearer (a workload's JWT) or enterprise (the enterprise's identity provider)", o.Grant)
	case o.Grant == "jwt_bearer" && (o.Assertion == "") == (o.AssertionFile == ""):
		return fmt.Errorf("oauth grant jwt_bearer needs the workload's JWT: assertion (e.g. \"${ACTIONS_ID_TOKEN}\") or assertion_file (an absolute path), one of them")
	case (o.Assertion != "" || o.AssertionFile != "") && o.Grant != "jwt_bearer":
		return fmt.Errorf("oauth assertion and assertion_file are for \"grant\": \"jwt_bearer\"; add it")
	case o.AssertionFile != "" && !strings.HasPrefix(o.AssertionFile, "$") && !filepath.IsAbs(o.AssertionFile):
		return fmt.Errorf("oauth assertion_file %q must be an absolute path (or start with a ${VAR} such as ${HOME})", o.AssertionFile)
	case o.Grant == "enterprise" && (o.IdPIssuer == "" || o.IdPClientID == "" || o.ClientID == ""):
		return fmt.Errorf("oauth grant enterprise needs idp_issuer and idp_client_id (nerve's client at the identity provider) and client_id (its client at the MCP server's authorization server)")
	case (o.IdPIssuer != "" || o.IdPClientID != "" || o.IdPClientSecret != "" || o.IdPTokenEndpoint != "" || o.IDToken != "") && o.Grant != "enterprise":
		return fmt.Errorf("oauth idp_issuer, idp_client_id, idp_client_secret, idp_token_endpoint and id_token are for \"grant\": \"enterprise\"; add it")
	case o.Grant == "client_credentials" && (o.ClientID == "" || credentials == 0):
		return fmt.Errorf("oauth grant client_credentials needs client_id and client_secret (e.g. \"client_secret\": \"${MY_SECRET}\"), or client_id and private_key or private_key_file")
	case credentials > 1:
		return fmt.Errorf("oauth: give one of client_secret, private_key and private_key_file, not %d", credentials)
	case key && o.Grant != "client_credentials":
		return fmt.Errorf("oauth private_key and private_key_file are for \"grant\": \"client_credentials\" (private_key_jwt); add it, or sign in with a person (`nerve node auth`) and no key")
	case o.SigningAlg != "" && !key:
		return fmt.Errorf("oauth signing_alg %q needs private_key or private_key_file", o.SigningAlg)
	case o.SigningAlg != "" && !slices.Contains(SigningAlgs, o.SigningAlg):
		return fmt.Errorf("oauth signing_alg %q: use one of %s, or leave it out to use the key's own", o.SigningAlg, strings.Join(SigningAlgs, ", "))
	case o.PrivateKey != "" && !strings.Contains(o.PrivateKey, "${") && !strings.Contains(o.PrivateKey, "-----BEGIN"):
		return fmt.Errorf("oauth private_key holds the PEM text itself (usually \"${MY_KEY}\"); for a file use private_key_file")
	case o.PrivateKeyFile != "" && !strings.HasPrefix(o.PrivateKeyFile, "$") && !filepath.IsAbs(o.PrivateKeyFile):
		return fmt.Errorf("oauth private_key_file %q must be an absolute path (or start with a ${VAR} such as ${HOME})", o.PrivateKeyFile)
	case o.ClientSecret != "" && o.ClientID == "":
		return fmt.Errorf("oauth client_secret needs the client_id it belongs to")
	case o.ClientMetadataURL != "" && !strings.HasPrefix(o.ClientMetadataURL, "https://"):
		return fmt.Errorf("oauth client_metadata_url %q must be an https URL with a path", o.ClientMetadataURL)
	}
	return nil
}
