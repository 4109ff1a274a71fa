package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/node"
)

// TestReplaceIfMatch: the GET and the PUT of a node answer its spec's
// ETag; a PUT whose If-Match is not the current tag is 412 changed, in
// the API's error shape, and changes nothing; one with the current tag,
// "*" or no If-Match replaces the node.
func TestReplaceIfMatch(t *testing.T) {
	d, err := New(&Options{Registry: testRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	sock := serveSocket(t, d)
	hc := socketClient(t, sock)
	const nodeURL = "http://nerve/v1/sessions/work/nodes/a"
	send := func(method, url, ifMatch string, body any, out any) *http.Response {
		t.Helper()
		var rd *bytes.Reader
		if body != nil {
			data, _ := json.Marshal(body)
			rd = bytes.NewReader(data)
		} else {
			rd = bytes.NewReader(nil)
		}
		req, _ := http.NewRequest(method, url, rd)
		if ifMatch != "" {
			req.Header.Set("If-Match", ifMatch)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if out != nil {
			if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
				t.Fatalf("%s %s: decoding the answer: %v", method, url, err)
			}
		}
		return resp
	}
	get := func() (api.NodeDetail, string) {
		t.Helper()
		var dt api.NodeDetail
		resp := send("GET", nodeURL, "", nil, &dt)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET the node: %s", resp.Status)
		}
		return dt, resp.Header.Get("ETag")
	}

	if resp := send("POST", "http://nerve/v1/sessions/work/nodes", "", node.Spec{ID: "a", Kind: "identity", Cwd: "/zero"}, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("adding the node: %s", resp.Status)
	}
	_, read := get()
	if len(read) != 18 || read[0] != '"' || read[17] != '"' {
		t.Fatalf("GET's ETag = %q, want a strong tag of 16 hex digits", read)
	}
	if _, again := get(); again != read {
		t.Errorf("two GETs of an unchanged node: ETag %s then %s", read, again)
	}

	resp := send("PUT", nodeURL, read, node.Spec{ID: "a", Kind: "identity", Cwd: "/one"}, nil)
	dt, now := get()
	if resp.StatusCode != http.StatusOK || dt.Spec.Cwd != "/one" {
		t.Fatalf("PUT with the current tag: %s, cwd %q; want 200 and the new spec", resp.Status, dt.Spec.Cwd)
	}
	if put := resp.Header.Get("ETag"); put != now || now == read {
		t.Errorf("PUT answered ETag %s, GET after it %s (before %s); want the new spec's, the same", put, now, read)
	}

	for _, stale := range []string{read, "W/" + now, `"0000000000000000", ` + read} {
		var body api.ErrorBody
		resp := send("PUT", nodeURL, stale, node.Spec{ID: "a", Kind: "identity", Cwd: "/lost"}, &body)
		if resp.StatusCode != http.StatusPreconditionFailed || body.Error.Code != api.CodeChanged ||
			!strings.Contains(body.Error.Message, "changed by someone else since it was read") || !strings.Contains(body.Error.Message, "run the command again") {
			t.Errorf("PUT with If-Match %s: %s %+v; want 412 %q saying the node changed and to run the command again", stale, resp.Status, body.Error, api.CodeChanged)
		}
	}
	if dt, tag := get(); dt.Spec.Cwd != "/one" || tag != now {
		t.Errorf("after refused PUTs the node is %q, tag %s; want %q, %s", dt.Spec.Cwd, tag, "/one", now)
	}

	for i, ifMatch := range []string{`"0000000000000000", ` + now, "*", ""} {
		cwd := "/ok" + string(rune('a'+i))
		if resp := send("PUT", nodeURL, ifMatch, node.Spec{ID: "a", Kind: "identity", Cwd: cwd}, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("PUT with If-Match %q: %s, want 200", ifMatch, resp.Status)
		}
		dt, tag := get()
		if dt.Spec.Cwd != cwd {
			t.Errorf("after PUT with If-Match %q the cwd is %q, want %q", ifMatch, dt.Spec.Cwd, cwd)
		}
		now = tag
	}
}
