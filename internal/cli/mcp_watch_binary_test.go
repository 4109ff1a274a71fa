//go:build unix

package cli

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nerve-dev/nerve/internal/testutil"
)

// TestBinaryImportWatch: `nerve mcp import --watch` applies each change
// of the file, as an import would: a server added becomes a node, one
// removed is removed, one changed is replaced; a node not imported from
// the file stays, and a file that cannot be read changes nothing; the
// near miss of a key is refused as an import refuses it (issue 27 item 7).
func TestBinaryImportWatch(t *testing.T) {
	n := newRealNerve(t)
	server := testutil.BuildBinary(t, "./fixtures/mcpserver")
	conf := filepath.Join(n.home, ".mcp.json")
	write := func(body string) {
		t.Helper()
		// As an editor saves: a new file renamed over the old one.
		tmp := conf + ".tmp"
		if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, conf); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(name string, args ...string) string {
		a := ""
		if len(args) > 0 {
			a = `, "args": ["` + strings.Join(args, `", "`) + `"]`
		}
		return `"` + name + `": {"command": "` + server + `"` + a + `}`
	}
	write(`{"mcpServers": {` + entry("a") + `, ` + entry("b") + `}}`)
	n.Must("node", "add", "mcp", "byhand", "--", server) // not from the file

	cmd := n.Command("mcp", "import", "--watch", conf)
	lines := make(chan string, 100)
	pipe := func(r io.Reader) {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go pipe(stdout)
	go pipe(stderr)
	// waitFor waits until the watcher has said each of want, in any
	// order: stdout and stderr are two pipes, read apart.
	var seen []string
	waitFor := func(want ...string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		missing := map[string]bool{}
		for _, w := range want {
			missing[w] = true
		}
		for len(missing) > 0 {
			select {
			case l := <-lines:
				seen = append(seen, l)
				for w := range missing {
					if strings.Contains(l, w) {
						delete(missing, w)
					}
				}
			case <-deadline:
				t.Fatalf("the watcher did not say %v; it said:\n%s", missing, strings.Join(seen, "\n"))
			}
		}
	}
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	waitFor("added a: READY", "added b: READY", "watching "+conf)

	write(`{"mcpServers": {` + entry("a", "--many", "2") + `, ` + entry("c") + `}}`)
	waitFor("changed", "replaced a: its entry in "+conf+" changed: READY", "added c: READY", "removed b: no longer in "+conf)
	ls := n.Must("node", "ls")
	for id, want := range map[string]bool{"a": true, "b": false, "c": true, "byhand": true} {
		if got := strings.Contains(ls, "\n"+id+" ") || strings.HasPrefix(ls, id+" "); got != want {
			t.Errorf("node %s in the session: %v, want %v\n%s", id, got, want, ls)
		}
	}
	// The replaced node runs the new entry: its extra tools are there.
	if tools := n.Must("tools", "a"); !strings.Contains(tools, "a.t0002") {
		t.Errorf("a's tools after the change:\n%s", tools)
	}

	// Half-written JSON changes nothing; a near miss is refused, and
	// while a server is written wrong nothing is removed.
	write(`{"mcpServers": {` + entry("a", "--many", "2"))
	waitFor("nothing was changed")
	write(`{"mcpServers": {` + entry("a", "--many", "2") + `, "c": {"command": "` + server + `", "arg": ["x"]}}}`)
	waitFor(`unknown key "arg" — did you mean "args"?`, "no node is removed until it is fixed")
	if ls := n.Must("node", "ls"); !strings.Contains(ls, "\nc ") && !strings.HasPrefix(ls, "c ") {
		t.Errorf("c was removed while written wrong:\n%s", ls)
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitFor("stopped watching")
	if err := cmd.Wait(); err != nil {
		t.Errorf("the watcher ended with %v after Ctrl-C, want exit 0", err)
	}
	if ls := n.Must("node", "ls"); !strings.Contains(ls, "byhand") {
		t.Errorf("the node added by hand is gone:\n%s", ls)
	}
}
