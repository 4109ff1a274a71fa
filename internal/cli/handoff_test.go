//go:build unix

package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHandoffReadsOnWhereTheFrontStopped: the core, handed a call the
// front began (the bytes it read, then the live connection), does not
// send the call again, shows only the stream lines the front did not show,
// and prints the result the front left to it.
func TestHandoffReadsOnWhereTheFrontStopped(t *testing.T) {
	home := t.TempDir()
	head := "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nConnection: close\r\n\r\n" +
		`{"kind":"progress","progress":1,"total":3,"message":"one"}` + "\n"
	rest := `{"kind":"progress","progress":2,"total":3,"message":"two"}` + "\n" +
		`{"kind":"result","result":{"content":[{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}]}}` + "\n"
	kept, err := os.CreateTemp(home, "kept")
	if err != nil {
		t.Fatal(err)
	}
	kept.WriteString(head)
	kept.Seek(0, 0)
	mine, daemon := net.Pipe()
	var sent bytes.Buffer
	go func() {
		// The daemon's side: the rest of the answer, then the end. What
		// the core writes would be a second request.
		daemon.Write([]byte(rest))
		daemon.Close()
	}()
	var stdout, stderr bytes.Buffer
	env := &Env{Stdout: &stdout, Stderr: &stderr, Stdin: strings.NewReader(""),
		Getenv: func(k string) string {
			if k == "NERVE_HOME" {
				return home
			}
			return ""
		},
		handoff: &callHandoff{conn: newReplayConn(&recordConn{Conn: mine, w: &sent}, kept), skip: 1},
	}
	defer env.Close(context.Background())
	err = Exec(context.Background(), env, []string{"call", "@fx", "image"})
	if err != nil {
		t.Fatalf("call: %v (stderr %q)", err, stderr.String())
	}
	if got, want := stderr.String(), "@fx: 2/3 two\n"; got != want {
		t.Errorf("stderr %q; want only the line the front did not show, %q", got, want)
	}
	if !strings.HasPrefix(stdout.String(), "[image, image/png, 8 B: ") || !strings.Contains(stdout.String(), filepath.Join("nerve-call-")) {
		t.Errorf("stdout %q; want the image saved and named", stdout.String())
	}
	if sent.Len() != 0 {
		t.Errorf("the core sent %q to the daemon; the front had sent the call", sent.String())
	}
}

// recordConn records what is written to the daemon's end.
type recordConn struct {
	net.Conn
	w *bytes.Buffer
}

func (c *recordConn) Write(p []byte) (int, error) { c.w.Write(p); return len(p), nil }
