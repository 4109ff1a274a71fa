//go:build linux

package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/client/mcpclient"
	"github.com/nerve-dev/nerve/pkg/node"
)

// 32 concurrent clients × 500 calls to an identity node through the
// socket of the real daemon: every call is answered exactly once, with its
// own text, and the daemon counts each call once.
func TestLoad(t *testing.T) {
	clients, calls := 32, 500
	if testing.Short() {
		calls = 50
	}
	h := newHome(t)
	h.must("node", "add", "identity", "echo")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	answered := make(map[string]int, clients*calls)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for ci := range clients {
		wg.Go(func() {
			c := client.New(client.Options{Socket: h.p.Socket})
			defer c.Close()
			s := c.Session("default")
			local := make([]time.Duration, 0, calls)
			for i := range calls {
				text := fmt.Sprintf("c%d-%d", ci, i)
				args, _ := json.Marshal(map[string]string{"text": text})
				start := time.Now()
				res, err := mcpclient.Call(ctx, s, "echo", "identity", args, nil)
				local = append(local, time.Since(start))
				if err != nil {
					errs <- fmt.Errorf("call %s: %w", text, err)
					return
				}
				got := node.ResultText(res, 0)
				mu.Lock()
				answered[got]++
				mu.Unlock()
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for ci := range clients {
		for i := range calls {
			if n := answered[fmt.Sprintf("c%d-%d", ci, i)]; n != 1 {
				t.Fatalf("call c%d-%d answered %d times", ci, i, n)
			}
		}
	}
	if len(answered) != clients*calls {
		t.Fatalf("%d distinct answers; want %d", len(answered), clients*calls)
	}
	var info struct{ Info node.Info }
	if err := json.Unmarshal([]byte(h.must("node", "info", "echo", "--json")), &info); err != nil {
		t.Fatal(err)
	}
	if info.Info.Calls != int64(clients*calls) {
		t.Errorf("daemon counted %d calls; want %d", info.Info.Calls, clients*calls)
	}
	slices.Sort(lat)
	t.Logf("%d calls from %d clients: p50 %v, p99 %v, max %v", len(lat), clients,
		lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
	_ = testutil.E2ERequired
}
