package front

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestReadResponse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		status   int
		body     string
		err      error // errors.Is; nil: no error
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nNerve-Version: v1\r\n\r\nhelloEXTRA", 200, "hello", nil},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n", 200, "hello world", nil},
		{"to the end", "HTTP/1.0 502 Bad Gateway\r\n\r\n{\"error\":1}", 502, `{"error":1}`, nil},
		{"bare LF", "HTTP/1.1 404 Not Found\nContent-Length: 2\n\nno", 404, "no", nil},
		{"gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 0, "", errResponse},
		{"not http", "SSH-2.0-OpenSSH\r\n\r\n", 0, "", errResponse},
		{"bad status", "HTTP/1.1 2000 OK\r\n\r\n", 0, "", errResponse},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, "", errResponse},
		{"no colon", "HTTP/1.1 200 OK\r\nNonsense\r\n\r\n", 0, "", errResponse},
		{"cut head", "HTTP/1.1 200 OK\r\nContent-Len", 0, "", io.EOF},
		{"chunk cut", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", 200, "hel", io.ErrUnexpectedEOF},
		{"chunk not ended", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhiXX0\r\n\r\n", 200, "hi", errResponse},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 200, "", errResponse},
		{"long line", "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 9000) + "\r\n\r\n", 0, "", errResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := readResponse(bufio.NewReaderSize(strings.NewReader(tc.in), 16))
			var body []byte
			if err == nil {
				if resp.status != tc.status {
					t.Errorf("status %d; want %d", resp.status, tc.status)
				}
				body, err = io.ReadAll(resp.body)
			}
			if string(body) != tc.body {
				t.Errorf("body %q; want %q", body, tc.body)
			}
			if tc.err == nil && err != nil || tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("error %v; want %v", err, tc.err)
			}
		})
	}
}

// FuzzReadResponse: the front's reader never panics or loops, and an
// answer it reads whole, net/http reads the same (status and body).
func FuzzReadResponse(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"error\":1}"))
	f.Fuzz(func(t *testing.T, in []byte) {
		resp, err := readResponse(bufio.NewReader(bytes.NewReader(in)))
		if err != nil {
			return
		}
		body, err := io.ReadAll(resp.body)
		if err != nil {
			return
		}
		want, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(in)), nil)
		if err != nil {
			t.Fatalf("the front read status %d, body %q; net/http: %v", resp.status, body, err)
		}
		wantBody, err := io.ReadAll(want.Body)
		if err != nil {
			t.Fatalf("the front read status %d, body %q; net/http's body: %v", resp.status, body, err)
		}
		if want.StatusCode != resp.status || !bytes.Equal(wantBody, body) {
			t.Fatalf("front: %d %q; net/http: %d %q", resp.status, body, want.StatusCode, wantBody)
		}
	})
}
