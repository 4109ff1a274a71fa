//go:build unix

package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/api"
	"go.uber.org/zap/zaptest"
)

// rawGet sends one GET on conn and reads its answer.
func rawGet(conn net.Conn, path string) (*http.Response, api.ErrorBody, error) {
	var body api.ErrorBody
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: nerve\r\n\r\n", path); err != nil {
		return nil, body, fmt.Errorf("writing: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, body, fmt.Errorf("reading: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_ = json.NewDecoder(resp.Body).Decode(&body)
	}
	return resp, body, nil
}

// TestServeAnswersWhileStopping: a daemon that is stopping has removed its
// socket's name and answers what reaches it anyway 503 stopping (the
// request did not run; the client sends it again to the next daemon),
// except its version.
func TestServeAnswersWhileStopping(t *testing.T) {
	d, err := New(&Options{Registry: testRegistry(), Version: "v9"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	sock := filepath.Join(testutil.SocketDir(t), "s")
	cancel, done := startServe(t, d, sock)
	var conns [2]net.Conn
	for i := range conns {
		if conns[i], err = net.Dial("unix", sock); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	cancel()
	for !d.stopping.Load() {
		time.Sleep(time.Millisecond)
	}
	if _, err := os.Stat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the socket is still there while the daemon stops: %v", err)
	}
	resp, body, err := rawGet(conns[0], "/v1/sessions")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || body.Error.Code != api.CodeStopping || !resp.Close {
		t.Errorf("a request to a stopping daemon: %v %+v, %v; want 503 %s and the connection closed", resp, body, err, api.CodeStopping)
	}
	if resp != nil && resp.Header.Get(api.HeaderVersion) != "v9" {
		t.Errorf("the answer has no version header: %v", resp.Header)
	}
	if resp, _, err := rawGet(conns[1], "/v1/version"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("version of a stopping daemon: %v, %v; want 200", resp, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
}

// TestServeStopLeavesNoConnectionUnanswered: clients hammer a daemon as
// it stops. Each connection either fails to connect (the next command
// starts a new daemon) or gets an answer — a real one, or 503 stopping.
// A connection that was made and then dropped without an answer leaves
// its client unable to tell whether its request ran; before Serve drained
// its socket's queue, a stop reset the connections waiting in it.
func TestServeStopLeavesNoConnectionUnanswered(t *testing.T) {
	sock := filepath.Join(testutil.SocketDir(t), "s")
	var answered, refused atomic.Int64
	for round := 0; round < 20; round++ {
		d, err := New(&Options{Registry: testRegistry(), Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		cancel, done := startServe(t, d, sock)
		var stop atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					conn, err := net.Dial("unix", sock)
					if err != nil {
						refused.Add(1)
						continue
					}
					resp, body, err := rawGet(conn, "/v1/sessions")
					conn.Close()
					switch {
					case err != nil:
						errs <- fmt.Errorf("round %d: a connection the daemon took was dropped without an answer: %w", round, err)
						return
					case resp.StatusCode == http.StatusOK,
						resp.StatusCode == http.StatusServiceUnavailable && body.Error.Code == api.CodeStopping:
						answered.Add(1)
					default:
						errs <- fmt.Errorf("round %d: answered %s %+v", round, resp.Status, body)
						return
					}
				}
			}()
		}
		time.Sleep(20 * time.Millisecond)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("round %d: Serve: %v", round, err)
		}
		time.Sleep(10 * time.Millisecond) // clients find the socket gone
		stop.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		d.Close(context.Background())
	}
	t.Logf("%d requests answered, %d connections refused", answered.Load(), refused.Load())
}
