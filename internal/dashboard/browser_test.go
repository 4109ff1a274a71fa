//go:build unix

package dashboard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/internal/testutil/npmfix"
	"github.com/nerve-dev/nerve/internal/testutil/tmux"
)

// A real daemon (the nerve binary), a real browser (Debian's chromium,
// headless, through chromedp): what a person sees and does on the
// dashboard. Screenshots go to $NERVE_ARTIFACTS, else the test's folder.

// realNerve runs the nerve binary with a home of its own.
type realNerve struct {
	t    *testing.T
	bin  string
	home string
}

func newRealNerve(t *testing.T) *realNerve {
	t.Helper()
	bin := testutil.BuildBinary(t, "./cmd/nerve")
	home, err := os.MkdirTemp("", "nd") // short: the socket's path must fit
	if err != nil {
		t.Fatal(err)
	}
	n := &realNerve{t: t, bin: bin, home: home}
	t.Cleanup(func() {
		n.run("daemon", "stop")
		os.RemoveAll(home)
	})
	return n
}

func (n *realNerve) run(args ...string) (string, error) {
	return n.runEnv(nil, args...)
}

func (n *realNerve) runEnv(env []string, args ...string) (string, error) {
	cmd := exec.Command(n.bin, args...)
	cmd.Env = append(append(os.Environ(), "NERVE_HOME="+n.home, "NERVE_SESSION=", "XDG_RUNTIME_DIR=", "BROWSER="), env...)
	cmd.Dir = n.home
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("nerve %s: %w\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

func (n *realNerve) must(args ...string) string {
	n.t.Helper()
	out, err := n.run(args...)
	if err != nil {
		n.t.Fatal(err)
	}
	return out
}

// chromium finds the browser or skips (fails under NERVE_REQUIRE_E2E=1).
func chromium(t *testing.T) string {
	t.Helper()
	var err error
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		var p string
		if p, err = exec.LookPath(name); err == nil {
			return p
		}
	}
	testutil.RequireE2E(t, "chromium (apt-get install chromium)", err)
	return ""
}

// browser starts a headless chromium with a fresh profile; the flags keep
// it off the network (without them this machine's closed network refuses
// its background connections and it stalls).
func browser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	exe := chromium(t)
	actx, cancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
		chromedp.Flag("hide-scrollbars", true), // full-page screenshots as wide as the page
		chromedp.WindowSize(1280, 1000),
	)
	t.Cleanup(cancel)
	bctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		t.Fatalf("starting chromium: %v", err)
	}
	return bctx
}

// artifacts is where screenshots go.
func artifacts(t *testing.T) string {
	if dir := os.Getenv("NERVE_ARTIFACTS"); dir != "" {
		dir = filepath.Join(dir, "dashboard")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// waitFor waits until the CSS selector matches a visible element.
func waitFor(t *testing.T, ctx context.Context, sel, what string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(wctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("waiting for %s (%s): %v\nthe page reads:\n%s", what, sel, err, body)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// The graph the run test draws: a diamond whose one branch waits on a
// FIFO the test writes, so the test sees the run half done.
const diamond = `description: a diamond for the dashboard's test
inputs:
  text: {type: string, default: hi, description: what the first step echoes}
  loud: {type: boolean, default: false, description: skip the shout}
steps:
  first: {call: echo.identity, args: {text: "${inputs.text}"}}
  wait:  {call: bash.bash, args: {command: "cat FIFO"}, after: first}
  shout: {call: fx.echo, args: {text: "${steps.first.text}!"}, when: "${inputs.loud} == false"}
  join:  {call: echo.identity, args: {text: "${steps.wait.text} ${steps.shout.text}"}}
output: "${steps.join.text}"
`

func TestDashboardInBrowser(t *testing.T) {
	chromium(t) // skip early, before building anything
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	n := newRealNerve(t)
	fx := testutil.BuildBinary(t, "./fixtures/mcpserver")
	fifo := filepath.Join(n.home, "release")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	n.must("node", "add", "identity", "echo")
	n.must("node", "add", "mcp", "fx", "--", fx)
	n.run("node", "add", "mcp", "broken", "--", "false") // in ERROR, with its reason
	g := filepath.Join(n.home, "diamond.yaml")
	if err := os.WriteFile(g, []byte(strings.ReplaceAll(diamond, "FIFO", fifo)), 0o600); err != nil {
		t.Fatal(err)
	}
	n.must("graph", "add", "g", "--from", g)
	n.must("node", "stop", "echo")
	link := strings.TrimSpace(n.must("ui", "--url"))
	u, err := url.Parse(link)
	if err != nil || u.Query().Get("token") == "" {
		t.Fatalf("nerve ui --url printed %q: want an address with a token", link)
	}
	origin := u.Scheme + "://" + u.Host

	bctx := browser(t, ctx)
	tab, closeTab := chromedp.NewContext(bctx)
	defer closeTab()
	console := chromedp.Console(tab)
	var mu sync.Mutex
	var problems []string
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError && !strings.Contains(m.Text, "Failed to load resource") {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("%s: %s (%s:%d)", m.Type, m.Text, m.URL, m.Line+1))
				mu.Unlock()
			}
		}
	}()
	dir := artifacts(t)

	if err := chromedp.Do(tab, chromedp.Navigate(link)); err != nil {
		t.Fatal(err)
	}
	t.Run("token leaves the address", func(t *testing.T) {
		got := eval[string](t, tab, `location.href`)
		if strings.Contains(got, "token") {
			t.Errorf("after the redirect the address is %s: the token stayed in it", got)
		}
	})

	t.Run("node goes READY after nerve node start", func(t *testing.T) {
		waitFor(t, tab, `#status.live`, "the event stream")
		waitFor(t, tab, `tr[data-node="echo"][data-state="STOPPED"]`, "echo STOPPED")
		waitFor(t, tab, `tr[data-node="fx"][data-state="READY"]`, "fx READY")
		waitFor(t, tab, `tr[data-node="broken"][data-state="ERROR"] td.error`, "broken in ERROR")
		if got := eval[string](t, tab, `document.querySelector('tr[data-node="broken"] td.error').textContent`); !strings.Contains(got, "exited") {
			t.Errorf("broken's last error reads %q", got)
		}
		n.must("node", "start", "echo")
		waitFor(t, tab, `tr[data-node="echo"][data-state="READY"]`, "echo READY after `nerve node start echo`")
		if got := eval[string](t, tab, `document.querySelector('tr[data-node="fx"] td.tools').textContent`); got == "0" {
			t.Errorf("fx shows %s tools", got)
		}
		screenshot(t, tab, dir, "nodes")
	})

	t.Run("a form from every kind of schema", func(t *testing.T) {
		// The page's own module, on a schema with each kind of property.
		got := eval[string](t, tab, `import('./form.js').then((m) => {
			const tool = {name: 't', inputSchema: {type: 'object', required: ['s', 'i', 'e'], properties: {
				s: {type: 'string', description: 'a string'},
				d: {type: 'string', default: 'dflt'},
				n: {type: 'number'},
				i: {type: 'integer', minimum: 0},
				b: {type: 'boolean'},
				bt: {type: 'boolean', default: true},
				e: {type: 'string', enum: ['red', 'green']},
				en: {enum: [1, 2, 3], default: 2},
				a: {type: 'array', items: {type: 'string'}},
				o: {type: 'object', default: {k: 1}},
				u: {type: ['string', 'null']},
			}}};
			const outs = [];
			const f = m.toolForm(tool, (collect) => { try { outs.push(JSON.stringify(collect())); } catch (e) { outs.push('refused: ' + e); } });
			f.hidden = true;
			document.body.append(f);
			const kinds = [...f.querySelectorAll('.field')].map((x) => x.dataset.arg + ':' + x.className.replace('field ', '') + (x.querySelector('.req') ? '*' : '')).join(' ');
			const set = (id, v) => { f.querySelector('#arg-' + id).value = v; };
			set('s', 'x'); set('i', '7'); set('e', '1'); set('a', '["p", "q"]'); set('n', '2.5');
			f.querySelector('#arg-b').checked = true;
			f.requestSubmit();
			set('i', '1.5');
			f.requestSubmit();
			set('i', '1'); set('o', '{oops');
			f.requestSubmit();
			f.remove();
			return [kinds, ...outs].join('\n');
		})`)
		want := strings.Join([]string{
			"s:string* d:string n:number i:integer* b:boolean bt:boolean e:enum* en:enum a:json o:json u:string",
			`{"s":"x","d":"dflt","n":2.5,"i":7,"b":true,"bt":true,"e":"green","en":2,"a":["p","q"],"o":{"k":1}}`,
			"refused: i: 1.5 is not an integer",
			"refused: o: not JSON: ",
		}, "\n")
		if !strings.HasPrefix(got, want) {
			t.Errorf("the form of every kind reads\n%s\nwant\n%s…", got, want)
		}
	})

	t.Run("a tool's form calls it and shows the result", func(t *testing.T) {
		if err := chromedp.Do(tab,
			chromedp.Click(chromedp.CSS(`tr[data-node="fx"] td.id a`)),
			chromedp.WaitVisible(chromedp.CSS(`button[data-tool="echo"]`)),
			chromedp.Click(chromedp.CSS(`button[data-tool="echo"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#call-form[data-tool="echo"] #arg-text`)),
			chromedp.SendKeys(chromedp.CSS(`#arg-text`), "hello from the browser"),
			chromedp.Click(chromedp.CSS(`#call-form button[type=submit]`)),
		); err != nil {
			t.Fatal(err)
		}
		waitFor(t, tab, `#result[data-outcome="ok"]`, "the echo result")
		if got := eval[string](t, tab, `document.querySelector('#result pre').textContent`); got != "hello from the browser" {
			t.Errorf("the result reads %q", got)
		}
		// The call log shows it as it happens, with its caller.
		waitFor(t, tab, `#calls tr[data-tool="echo"][data-caller="api:dashboard"]`, "the call in the call log")

		// An image result, shown from a data: URL (the CSP's one exception).
		if err := chromedp.Do(tab,
			chromedp.Click(chromedp.CSS(`button[data-tool="image"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#call-form[data-tool="image"]`)),
			chromedp.Click(chromedp.CSS(`#call-form button[type=submit]`)),
		); err != nil {
			t.Fatal(err)
		}
		waitFor(t, tab, `#result img.image`, "the image result")
		if w := eval[int](t, tab, `new Promise(r => { const i = document.querySelector('#result img'); i.decode().then(() => r(i.naturalWidth), () => r(-1)); })`); w <= 0 {
			t.Errorf("the image result did not load (naturalWidth %d): blocked by the CSP?", w)
		}
		screenshot(t, tab, dir, "tool-image")
		// Back to echo for the screenshot of a form with its result.
		if err := chromedp.Do(tab,
			chromedp.Click(chromedp.CSS(`button[data-tool="echo"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#arg-text`)),
			chromedp.SendKeys(chromedp.CSS(`#arg-text`), `{"from": "the dashboard", "n": 3}`),
			chromedp.Click(chromedp.CSS(`#call-form button[type=submit]`)),
		); err != nil {
			t.Fatal(err)
		}
		waitFor(t, tab, `#result[data-outcome="ok"]`, "the echo result")
		screenshot(t, tab, dir, "tool-form")
	})

	t.Run("a graph run's steps turn done", func(t *testing.T) {
		if err := chromedp.Do(tab,
			chromedp.Click(chromedp.CSS(`tr[data-node="g"] td.id a`)),
			chromedp.WaitVisible(chromedp.CSS(`button[data-tool="run"]`)),
			chromedp.Click(chromedp.CSS(`button[data-tool="run"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#call-form[data-tool="run"]`)),
			chromedp.Click(chromedp.CSS(`#call-form button[type=submit]`)),
		); err != nil {
			t.Fatal(err)
		}
		// Half way: the run is drawn while it goes.
		waitFor(t, tab, `.run-view[data-state="running"] g.step[data-step="first"][data-state="finished"]`, "step first done")
		waitFor(t, tab, `.run-view[data-state="running"] g.step[data-step="wait"][data-state="started"]`, "step wait running")
		waitFor(t, tab, `.run-view[data-state="running"] g.step[data-step="shout"][data-state="finished"]`, "step shout done, while wait runs")
		waitFor(t, tab, `g.step[data-step="join"][data-state="pending"]`, "step join pending")
		waitFor(t, tab, `#runs a[data-state="running"]`, "the run in the graph's list of runs")
		screenshot(t, tab, dir, "graph-running")
		release(t, fifo)
		waitFor(t, tab, `.run-view[data-state="finished"]`, "the run finished")
		for _, step := range []string{"first", "wait", "shout", "join"} {
			waitFor(t, tab, `g.step[data-step="`+step+`"][data-state="finished"]`, "step "+step+" done")
		}
		waitFor(t, tab, `#result[data-outcome="ok"]`, "the graph's result")
		if got := eval[string](t, tab, `document.querySelector('#result pre').textContent`); got != "released hi!" {
			t.Errorf("the graph's result reads %q, want %q", got, "released hi!")
		}
		// The steps' calls are in the call log, by caller.
		waitFor(t, tab, `#calls tr[data-caller="graph:g/shout"]`, "the step's call in the call log")
		if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.CSS(`#filter-caller`), "graph")); err != nil {
			t.Fatal(err)
		}
		if got := eval[string](t, tab, `[...document.querySelectorAll('#calls tbody tr')].map(r => r.dataset.caller).filter(c => !c.startsWith('graph:')).join()`); got != "" {
			t.Errorf("filtered by caller graph, the call log still shows callers %s", got)
		}
		if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`g.step[data-step="shout"]`))); err != nil {
			t.Fatal(err)
		}
		waitFor(t, tab, `.step-details[data-step="shout"]`, "the step's details")
		screenshot(t, tab, dir, "graph-run")

		// The record after it ended: opened from the run list, anew.
		if err := chromedp.Do(tab, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, tab, `#runs a[data-state="finished"]`, "the finished run in the list")
		if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#runs a[data-state="finished"]`))); err != nil {
			t.Fatal(err)
		}
		waitFor(t, tab, `.run-view[data-state="finished"] g.step[data-step="join"][data-state="finished"]`, "the finished run's record")
	})

	t.Run("an action without the CSRF header is refused", func(t *testing.T) {
		status := eval[int](t, tab, `fetch('api/sessions/default/nodes/echo/stop', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{}'}).then(r => r.status)`)
		if status != http.StatusForbidden {
			t.Errorf("a stop without %s answered %d, want 403", "X-Nerve-CSRF", status)
		}
		// A page of another port of this machine: the same site to the
		// browser, so the cookie goes with its request.
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `<!doctype html><script>fetch(%q, {method: 'POST', mode: 'no-cors', credentials: 'include', headers: {'Content-Type': 'text/plain'}, body: '{}'}).then(() => document.title = 'sent', () => document.title = 'blocked');</script>`,
				origin+"/ui/api/sessions/default/nodes/echo/stop")
		}))
		defer evil.Close()
		other, closeOther := chromedp.NewContext(bctx)
		defer closeOther()
		if err := chromedp.Do(other, chromedp.Navigate(evil.URL)); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(other, chromedp.Poll[bool](`document.title !== ''`)); err != nil {
			t.Fatal(err)
		}
		if st, _ := n.run("node", "ls"); !strings.Contains(st, "echo") || strings.Contains(lineOf(st, "echo"), "STOPPED") {
			t.Errorf("a page of another origin stopped node echo:\n%s", st)
		}
		if got := eval[string](t, tab, `document.querySelector('tr[data-node="echo"]').dataset.state`); got != "READY" {
			t.Errorf("echo is %s on the dashboard", got)
		}
	})

	t.Run("nerve ui opens $BROWSER", func(t *testing.T) {
		got := filepath.Join(n.home, "opened")
		script := filepath.Join(n.home, "browser.sh")
		if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$1\" > "+got+"\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := n.runEnv([]string{"BROWSER=" + script}, "ui"); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 10*time.Second, func() bool { b, _ := os.ReadFile(got); return bytes.HasSuffix(b, []byte("\n")) }, "the browser script to run")
		b, _ := os.ReadFile(got)
		opened := strings.TrimSpace(string(b))
		if !strings.HasPrefix(opened, origin+"/ui/?") || opened == link {
			t.Fatalf("$BROWSER was given %q, want a fresh address of %s/ui/", opened, origin)
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(opened)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Errorf("the address $BROWSER got answered %d, want 303 (its token fresh)", resp.StatusCode)
		}
		if _, err := n.run("--embedded", "ui", "--url"); err == nil || !strings.Contains(err.Error(), "serves no dashboard") {
			t.Errorf("nerve --embedded ui: %v, want it to say an embedded session serves no dashboard", err)
		}
	})

	t.Run("a page without the token, or with a used one, is refused", func(t *testing.T) {
		fresh, closeFresh := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
		defer closeFresh()
		for _, addr := range []string{origin + "/ui/", link, origin + "/ui/api/sessions/default/events"} {
			resp, err := chromedp.Run(fresh, chromedp.NavigateResponse(addr))
			if err != nil {
				t.Fatalf("opening %s: %v", addr, err)
			}
			if resp.Status != http.StatusUnauthorized {
				t.Errorf("%s answered %d in a browser without the cookie, want 401", addr, resp.Status)
			}
			if body := eval[string](t, fresh, `document.body.innerText`); !strings.Contains(body, "nerve ui") {
				t.Errorf("%s reads %q: it should say to use `nerve ui`", addr, body)
			}
		}
	})

	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("the page's console: %s", p)
	}
}

// release lets the graph's waiting step finish.
func release(t *testing.T, fifo string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString("released\n")
			err = errors.Join(err, f.Close())
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the graph's step never opened the FIFO")
	}
}

func lineOf(out, word string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == word {
			return l
		}
	}
	return ""
}

// TestDashboardSignIn: the sign-in button of an mcp node behind the
// TypeScript SDK's OAuth example server (discovery, dynamic registration,
// PKCE) starts `nerve node auth`'s flow in the daemon; the page shows the
// address to open; the person's browser opens it, the authorization
// server sends it back to the node's loopback callback, and the node
// comes up READY, announced on the page.
func TestDashboardSignIn(t *testing.T) {
	chromium(t)
	argv := npmfix.SDKExampleServer(t, "simpleStreamableHttp.js", "--oauth")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	mcpPort, authPort := freePort(t), freePort(t)
	srv := exec.Command(argv[0], argv[1:]...)
	srv.Env = append(os.Environ(), fmt.Sprintf("MCP_PORT=%d", mcpPort), fmt.Sprintf("MCP_AUTH_PORT=%d", authPort))
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	for _, port := range []int{mcpPort, authPort} {
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		testutil.WaitFor(t, 30*time.Second, func() bool {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
			}
			return err == nil
		}, "the SDK's OAuth example to listen on "+addr)
	}

	n := newRealNerve(t)
	env := []string{"NERVE_TOKENS=file"}
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	if _, err := n.runEnv(env, "node", "add", "mcp", "demo", "--url", fmt.Sprintf("http://localhost:%d/mcp", mcpPort),
		"--option", `oauth={"redirect_url":"`+redirect+`"}`); err == nil || !strings.Contains(err.Error(), "nerve node auth demo") {
		t.Fatalf("node add before sign-in: %v; want the node to ask for a sign-in", err)
	}
	link, err := n.runEnv(env, "ui", "--url")
	if err != nil {
		t.Fatal(err)
	}
	bctx := browser(t, ctx)
	tab, closeTab := chromedp.NewContext(bctx)
	defer closeTab()
	if err := chromedp.Do(tab, chromedp.Navigate(strings.TrimSpace(link))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, `tr[data-node="demo"][data-state="ERROR"] button[data-op="signin"]`, "demo in ERROR with a sign-in button")
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`tr[data-node="demo"] button[data-op="signin"]`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, `#messages a[href*="code_challenge="]`, "the address to sign in at")
	authURL := eval[string](t, tab, `document.querySelector('#messages a[href*="code_challenge="]').href`)

	// The person opens it (the link opens a new tab; here, a tab of the
	// same browser): the authorize page sends it on to the callback.
	person, closePerson := chromedp.NewContext(bctx)
	defer closePerson()
	if err := chromedp.Do(person, chromedp.Navigate(authURL)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, person, `body`, "the callback's page")
	if body := eval[string](t, person, `document.body.innerText`); !strings.Contains(body, "signed in") {
		t.Errorf("the callback's page reads %q", body)
	}
	waitFor(t, tab, `tr[data-node="demo"][data-state="READY"]`, "demo READY after the sign-in")
	waitFor(t, tab, `#messages .message[data-tag="signed-in"]`, "the sign-in's news")
	if msg := eval[string](t, tab, `document.querySelector('#messages .message[data-tag="signed-in"]').innerText`); !strings.Contains(msg, "demo: signed in") {
		t.Errorf("the page says %q, want that demo signed in", msg)
	}
	if out := n.must("call", "@demo", "greet", "name=nerve"); !strings.Contains(out, "Hello, nerve!") {
		t.Errorf("greet after the sign-in: %q", out)
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestDashboardApproval: a call the session's policy asks about, made by
// an MCP client that cannot show a form (the Go SDK's client over the
// real `nerve mcp serve`) with no Commander attached, is put to the
// person at the dashboard: the page shows who calls, which tool and the
// exact arguments; Allow once lets the call finish with its result, Deny
// makes it an isError result that says so; the call log names the
// dashboard.
func TestDashboardApproval(t *testing.T) {
	chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := newRealNerve(t)
	fx := testutil.BuildBinary(t, "./fixtures/mcpserver")
	n.must("node", "add", "mcp", "ev", "--", fx)
	n.must("session", "set", "policy", "ev.echo=ask")
	link := strings.TrimSpace(n.must("ui", "--url"))

	bctx := browser(t, ctx)
	tab, closeTab := chromedp.NewContext(bctx)
	defer closeTab()
	if err := chromedp.Do(tab, chromedp.Navigate(link)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, `#status.live`, "the event stream")

	serve := exec.Command(n.bin, "mcp", "serve")
	serve.Env = append(os.Environ(), "NERVE_HOME="+n.home, "NERVE_SESSION=", "XDG_RUNTIME_DIR=")
	serve.Dir = n.home
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: serve, TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(text string) <-chan *mcp.CallToolResult {
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ev.echo", Arguments: map[string]any{"text": text}})
			if err != nil {
				res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the call failed: " + err.Error()}}}
			}
			done <- res
		}()
		return done
	}
	resultText := func(r *mcp.CallToolResult) string {
		if len(r.Content) == 0 {
			return ""
		}
		if tc, ok := r.Content[0].(*mcp.TextContent); ok {
			return tc.Text
		}
		return ""
	}
	dir := artifacts(t)

	// Allowed once: markup in the arguments is text, a shell's > is >.
	const first = `psql -c "DELETE FROM users" > /tmp/out <b>now</b>`
	res := call(first)
	waitFor(t, tab, `.approval[data-state="waiting"][data-node="ev"][data-tool="echo"] button[data-answer="allow"]`, "the call's prompt")
	if got := eval[string](t, tab, `document.querySelector('.approval[data-state="waiting"] pre.args').textContent`); got != "{\n  \"text\": \"psql -c \\\"DELETE FROM users\\\" > /tmp/out <b>now</b>\"\n}" {
		t.Errorf("the prompt shows the arguments\n%s", got)
	}
	if got := eval[string](t, tab, `document.querySelector('.approval[data-state="waiting"] .approval-head').textContent`); got != "mcp:agent wants to call ev.echo" {
		t.Errorf("the prompt's head reads %q", got)
	}
	if got := eval[int](t, tab, `document.querySelectorAll('.approval pre.args b').length`); got != 0 {
		t.Errorf("the arguments' markup became %d elements", got)
	}
	if got := eval[string](t, tab, `document.title`); !strings.HasPrefix(got, "(1) nerve") {
		t.Errorf("the page's title with a call waiting: %q", got)
	}
	screenshot(t, tab, dir, "approval")
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`.approval[data-state="waiting"] button[data-answer="allow"]`))); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r.IsError || resultText(r) != first {
		t.Errorf("the allowed call: %q (isError %v)", resultText(r), r.IsError)
	}
	waitFor(t, tab, `.approval[data-state="answered"] .outcome`, "the prompt answered")
	if got := eval[string](t, tab, `document.querySelector('.approval[data-state="answered"] .outcome').textContent`); !strings.HasPrefix(got, "answered by the dashboard in ") || !strings.HasSuffix(got, ": allowed once") {
		t.Errorf("the answered prompt reads %q", got)
	}

	// Denied.
	res = call("rm -rf /srv/data")
	waitFor(t, tab, `.approval[data-state="waiting"] button[data-answer="deny"]`, "the second call's prompt")
	if got := eval[string](t, tab, `document.querySelector('.approval[data-state="waiting"] pre.args').textContent`); !strings.Contains(got, `"rm -rf /srv/data"`) {
		t.Errorf("the second prompt shows %q", got)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`.approval[data-state="waiting"] button[data-answer="deny"]`))); err != nil {
		t.Fatal(err)
	}
	if r := <-res; !r.IsError || !strings.Contains(resultText(r), "(at dashboard) refused it: denied on the dashboard. It did not run.") {
		t.Errorf("the denied call: %q (isError %v)", resultText(r), r.IsError)
	}
	waitFor(t, tab, `#calls tr[data-caller="mcp:agent"][data-tool="echo"].bad`, "the denied call in the call log")
	screenshot(t, tab, dir, "approval-answered")
	if out := n.must("log", "-n", "2"); !strings.Contains(out, "policy approved by dashboard (ev.echo=ask)") || !strings.Contains(out, "policy denied by dashboard (ev.echo=ask)") {
		t.Errorf("nerve log:\n%s", out)
	}

	// With a Commander open too (the real REPL in a terminal), both ask
	// at once; the page answers first and the Commander's dialog goes,
	// saying so.
	term := tmux.Start(t, []string{"NERVE_HOME=" + n.home, "NERVE_SESSION=", "XDG_RUNTIME_DIR=", "NO_COLOR=1", "TERM=xterm"}, n.bin)
	term.WaitFor("default>", 30*time.Second)
	res = call("both asked")
	term.WaitFor("approve>", 30*time.Second)
	waitFor(t, tab, `.approval[data-state="waiting"] button[data-answer="allow"]`, "the third call's prompt")
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`.approval[data-state="waiting"] button[data-answer="allow"]`))); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r.IsError || resultText(r) != "both asked" {
		t.Errorf("the call allowed on the page with a Commander open: %q (isError %v)", resultText(r), r.IsError)
	}
	term.WaitFor("! mcp:agent's call to @ev echo no longer waits for you: answered by the dashboard in", 20*time.Second)
}
