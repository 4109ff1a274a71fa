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
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/pkg/node"
)

// testKey is a private key in the PEM form a person would have, and its
// public key.
type testKey struct {
	name string
	pem  string
	pub  crypto.PublicKey
	alg  string // the signing_alg option; empty: the key's own
	want string // the JWS alg the assertion must carry
}

var (
	testKeysOnce sync.Once
	testKeysList []testKey
)

// testKeys makes one key of every kind nerve signs with, in each PEM
// form it reads (RSA generation is slow: once per test binary).
func testKeys(t *testing.T) []testKey {
	t.Helper()
	testKeysOnce.Do(func() {
		must := func(b []byte, err error) []byte {
			if err != nil {
				panic(err)
			}
			return b
		}
		p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
		rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
		edPub, edKey, _ := ed25519.GenerateKey(rand.Reader)
		enc := func(typ string, der []byte) string {
			return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
		}
		pkcs8 := func(k any) string { return enc("PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(k))) }
		testKeysList = []testKey{
			{name: "EC P-256 PKCS8", pem: pkcs8(p256), pub: &p256.PublicKey, want: "ES256"},
			{name: "EC P-384 SEC1", pem: enc("EC PRIVATE KEY", must(x509.MarshalECPrivateKey(p384))), pub: &p384.PublicKey, want: "ES384"},
			{name: "EC P-521 PKCS8", pem: pkcs8(p521), pub: &p521.PublicKey, want: "ES512"},
			{name: "RSA PKCS1", pem: enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)), pub: &rsaKey.PublicKey, want: "RS256"},
			{name: "RSA PS384", pem: pkcs8(rsaKey), pub: &rsaKey.PublicKey, alg: "PS384", want: "PS384"},
			{name: "RSA RS512", pem: pkcs8(rsaKey), pub: &rsaKey.PublicKey, alg: "RS512", want: "RS512"},
			{name: "Ed25519", pem: pkcs8(edKey), pub: edPub, want: "EdDSA"},
		}
	})
	return testKeysList
}

// verifyJWS checks a compact JWS with pub (an independent reading of RFC
// 7515/7518, not nerve's signer) and returns its header and claims.
func verifyJWS(jws string, pub crypto.PublicKey) (header, claims map[string]any, err error) {
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		return nil, nil, fmt.Errorf("%d parts, want 3", len(parts))
	}
	dec := base64.RawURLEncoding
	var raw [3][]byte
	for i, p := range parts {
		if raw[i], err = dec.DecodeString(p); err != nil {
			return nil, nil, fmt.Errorf("part %d: %w", i, err)
		}
	}
	if err := json.Unmarshal(raw[0], &header); err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal(raw[1], &claims); err != nil {
		return nil, nil, err
	}
	alg, _ := header["alg"].(string)
	input := []byte(parts[0] + "." + parts[1])
	hashes := map[string]crypto.Hash{"256": crypto.SHA256, "384": crypto.SHA384, "512": crypto.SHA512}
	h := hashes[alg[len(alg)-3:]]
	var digest []byte
	if h != 0 {
		hh := h.New()
		hh.Write(input)
		digest = hh.Sum(nil)
	}
	sig := raw[2]
	ok := false
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		n := len(sig) / 2
		ok = strings.HasPrefix(alg, "ES") && n == (k.Curve.Params().BitSize+7)/8 &&
			ecdsa.Verify(k, digest, new(big.Int).SetBytes(sig[:n]), new(big.Int).SetBytes(sig[n:]))
	case *rsa.PublicKey:
		switch alg[:2] {
		case "RS":
			ok = rsa.VerifyPKCS1v15(k, h, digest, sig) == nil
		case "PS":
			ok = rsa.VerifyPSS(k, h, digest, sig, &rsa.PSSOptions{SaltLength: h.Size()}) == nil
		}
	case ed25519.PublicKey:
		ok = alg == "EdDSA" && ed25519.Verify(k, input, sig)
	}
	if !ok {
		return nil, nil, fmt.Errorf("signature (%s) does not verify", alg)
	}
	return header, claims, nil
}

// keyJWTServer is an MCP server whose authorization server takes only
// private_key_jwt client authentication, for client "machine", and
// verifies each client assertion with pub. Its tokens expire at once, so
// every MCP request asks for a new one.
type keyJWTServer struct {
	*httptest.Server
	pub  crypto.PublicKey
	algs []string // token_endpoint_auth_signing_alg_values_supported, if set

	mu       sync.Mutex
	requests []map[string]any // claims of each assertion
	header   map[string]any   // of the last
	errs     []string
}

func newKeyJWTServer(t *testing.T, pub crypto.PublicKey, algs ...string) *keyJWTServer {
	t.Helper()
	s := &keyJWTServer{pub: pub, algs: algs}
	mux := http.NewServeMux()
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newTestServer() }, nil)
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer machine-token-") {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+s.URL+`/.well-known/oauth-protected-resource/mcp", scope="tools"`)
			http.Error(w, "authenticate", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": s.URL + "/mcp", "authorization_servers": []string{s.URL + "/as"}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server/as", func(w http.ResponseWriter, r *http.Request) {
		meta := map[string]any{
			"issuer": s.URL + "/as", "token_endpoint": s.URL + "/as/token", "authorization_endpoint": s.URL + "/as/authorize",
			"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
			"grant_types_supported": []string{"client_credentials"}, "token_endpoint_auth_methods_supported": []string{"private_key_jwt"},
		}
		if len(s.algs) > 0 {
			meta["token_endpoint_auth_signing_alg_values_supported"] = s.algs
		}
		writeJSON(w, 200, meta)
	})
	mux.HandleFunc("/as/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		f := r.PostForm
		fail := func(format string, args ...any) {
			s.mu.Lock()
			s.errs = append(s.errs, fmt.Sprintf(format, args...))
			s.mu.Unlock()
			writeJSON(w, 401, map[string]any{"error": "invalid_client"})
		}
		if f.Get("grant_type") != "client_credentials" || f.Get("client_assertion_type") != assertionType ||
			f.Get("client_secret") != "" || r.Header.Get("Authorization") != "" {
			fail("token request %v (Authorization %q): want client_credentials with a jwt-bearer client assertion and no secret", f, r.Header.Get("Authorization"))
			return
		}
		if f.Get("resource") != s.URL+"/mcp" || f.Get("scope") != "tools" {
			fail("resource %q, scope %q: want the server's URL and tools", f.Get("resource"), f.Get("scope"))
			return
		}
		header, claims, err := verifyJWS(f.Get("client_assertion"), s.pub)
		if err != nil {
			fail("client assertion: %v", err)
			return
		}
		iat, _ := claims["iat"].(float64)
		exp, _ := claims["exp"].(float64)
		now := float64(time.Now().Unix())
		if claims["iss"] != "machine" || claims["sub"] != "machine" || claims["aud"] != s.URL+"/as" ||
			claims["jti"] == "" || iat > now+5 || exp <= now || exp-iat > 300 {
			fail("claims %v: want iss and sub machine, aud the issuer, a jti, a life of at most 5 minutes", claims)
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, claims)
		s.header = header
		n := len(s.requests)
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"access_token": fmt.Sprintf("machine-token-%d", n), "token_type": "Bearer", "expires_in": 1})
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func TestOAuthClientCredentialsPrivateKey(t *testing.T) {
	for i, k := range testKeys(t) {
		t.Run(k.name, func(t *testing.T) {
			s := newKeyJWTServer(t, k.pub)
			// Half the keys come from a file, half from a variable holding
			// the PEM on one line with \n, as CI secret stores keep it.
			oauth := map[string]any{"grant": "client_credentials", "client_id": "machine"}
			vars := map[string]string{}
			if i%2 == 0 {
				file := filepath.Join(t.TempDir(), "key.pem")
				if err := os.WriteFile(file, []byte(k.pem), 0o600); err != nil {
					t.Fatal(err)
				}
				oauth["private_key_file"] = file
			} else {
				oauth["private_key"] = "${MACHINE_KEY}"
				vars["MACHINE_KEY"] = strings.ReplaceAll(k.pem, "\n", `\n`)
			}
			if k.alg != "" {
				oauth["signing_alg"] = k.alg
			}
			opts, _ := json.Marshal(map[string]any{"transport": "http", "url": s.URL + "/mcp", "oauth": oauth})
			env := node.Env{Vars: mapVars(vars)}
			n, err := Factory(nil)(node.Spec{ID: "m2m", Kind: Kind, Options: opts}, env)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := n.Start(ctx); err != nil {
				s.mu.Lock()
				errs := s.errs
				s.mu.Unlock()
				t.Fatalf("start: %v (the authorization server saw: %v)", err, errs)
			}
			t.Cleanup(func() { n.Stop(context.Background()) })
			res, err := n.CallTool(ctx, &node.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"text":"no person"}`)})
			if err != nil || text(t, res) != "no person" {
				t.Fatalf("echo: %v, %v", res, err)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.errs) > 0 {
				t.Errorf("the authorization server refused: %v", s.errs)
			}
			if s.header["alg"] != k.want || s.header["typ"] != "JWT" {
				t.Errorf("assertion header %v, want alg %s, typ JWT", s.header, k.want)
			}
			// The token expires at once, so the call asked for another: a
			// new assertion, never a replayed one (RFC 7523 §3: jti).
			if len(s.requests) < 2 {
				t.Fatalf("%d token requests; want one per expired token", len(s.requests))
			}
			seen := map[any]bool{}
			for _, c := range s.requests {
				if seen[c["jti"]] {
					t.Errorf("jti %v sent twice", c["jti"])
				}
				seen[c["jti"]] = true
			}
		})
	}
}

func TestOAuthPrivateKeyErrors(t *testing.T) {
	dir := t.TempDir()
	cert := filepath.Join(dir, "cert.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}}), 0o600)
	ec := testKeys(t)[0].pem
	for name, tt := range map[string]struct {
		oauth map[string]any
		want  string
	}{
		"missing file": {map[string]any{"private_key_file": filepath.Join(dir, "nope.pem")},
			`mcp node "k": oauth private_key_file: open ` + filepath.Join(dir, "nope.pem") + ": no such file or directory"},
		"not a key": {map[string]any{"private_key_file": cert},
			`oauth private_key_file ` + cert + `: PEM block "CERTIFICATE" is not a private key`},
		"not PEM": {map[string]any{"private_key": "${K}"}, "oauth private_key: no PEM block found"},
		"alg for another key": {map[string]any{"private_key": ec, "signing_alg": "RS256"},
			"oauth private_key: signing_alg RS256 does not suit this key: use ES256"},
	} {
		t.Run(name, func(t *testing.T) {
			oauth := map[string]any{"grant": "client_credentials", "client_id": "machine"}
			for k, v := range tt.oauth {
				oauth[k] = v
			}
			opts, _ := json.Marshal(map[string]any{"transport": "http", "url": "http://127.0.0.1:1/mcp", "oauth": oauth})
			n, err := Factory(nil)(node.Spec{ID: "k", Kind: Kind, Options: opts}, node.Env{Vars: mapVars{"K": "-----not a key"}})
			if err != nil {
				t.Fatal(err)
			}
			err = n.Start(context.Background())
			n.Stop(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("start: %v; want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestOAuthPrivateKeyAlgRefused: an authorization server that names the
// algorithms it takes, without the key's, gets no request, and the
// message says what to change.
func TestOAuthPrivateKeyAlgRefused(t *testing.T) {
	k := testKeys(t)[len(testKeys(t))-1] // Ed25519
	s := newKeyJWTServer(t, k.pub, "ES256", "RS256")
	opts, _ := json.Marshal(map[string]any{"transport": "http", "url": s.URL + "/mcp",
		"oauth": map[string]any{"grant": "client_credentials", "client_id": "machine", "private_key": k.pem}})
	n, err := Factory(nil)(node.Spec{ID: "k", Kind: Kind, Options: opts}, node.Env{})
	if err != nil {
		t.Fatal(err)
	}
	err = n.Start(context.Background())
	n.Stop(context.Background())
	want := "the authorization server " + s.URL + "/as takes client assertions signed with ES256, RS256, not EdDSA: set the oauth signing_alg, or use another key"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("start: %v; want an error saying %q", err, want)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests)+len(s.errs) != 0 {
		t.Errorf("the token endpoint was asked %d times; want never", len(s.requests)+len(s.errs))
	}
}

// TestKeyJWTVerifiedByJose has the assertions nerve signs verified by jose
// (the JavaScript library the conformance suite and the TypeScript MCP
// SDK use), for every algorithm: a verifier nerve did not write.
func TestKeyJWTVerifiedByJose(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Node")
	}
	nodeBin := npmfix.Node22(t)
	modules := filepath.Join(npmfix.Dir(t, npmfix.FixtureNPM), "node_modules")
	type item struct{ Name, JWT, Pub, Alg string }
	var items []item
	for _, k := range testKeys(t) {
		s, err := parseSigningKey([]byte(k.pem), k.alg)
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		jwt, err := s.assertion("machine", "https://as.example/", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		der, _ := x509.MarshalPKIXPublicKey(k.pub)
		items = append(items, item{k.name, jwt, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), s.alg})
	}
	in, _ := json.Marshal(items)
	script := `
import * as jose from 'jose';
const items = JSON.parse(process.env.ITEMS);
for (const it of items) {
  try {
    const key = await jose.importSPKI(it.Pub, it.Alg);
    const { payload } = await jose.jwtVerify(it.JWT, key, { issuer: 'machine', subject: 'machine', audience: 'https://as.example/', maxTokenAge: '5m', algorithms: [it.Alg] });
    console.log('ok', it.Name, payload.jti ? 'jti' : 'no-jti');
  } catch (e) {
    console.log('FAIL', it.Name, e.message);
  }
}`
	cmd := exec.Command(nodeBin, "--input-type=module", "-e", script)
	cmd.Dir = filepath.Dir(modules)
	cmd.Env = append(os.Environ(), "ITEMS="+string(in))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	for _, it := range items {
		if !strings.Contains(string(out), "ok "+it.Name+" jti\n") {
			t.Errorf("jose did not verify the %s assertion (%s):\n%s", it.Name, it.Alg, out)
		}
	}
}
