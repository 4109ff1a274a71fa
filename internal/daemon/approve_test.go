package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/dashboard"
	"github.com/nerve-dev/nerve/internal/nodes/identity"
	"github.com/nerve-dev/nerve/internal/testutil"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
	"github.com/nerve-dev/nerve/pkg/session"
)

// page is an open dashboard page of the default session: its visit and
// its event stream.
type page struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
	r    *bufio.Reader
}

func openPage(t *testing.T, d *Daemon) *page {
	t.Helper()
	srv := httptest.NewServer(d.ui)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	p := &page{t: t, base: srv.URL, c: &http.Client{Jar: jar}}
	link, _ := d.ui.Link(srv.URL, "default")
	if resp, err := p.c.Get(link); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("opening the page: %v", err)
	}
	var hi struct{ CSRF string }
	resp, err := p.c.Get(srv.URL + "/ui/api/hello")
	if err != nil || json.NewDecoder(resp.Body).Decode(&hi) != nil || hi.CSRF == "" {
		t.Fatalf("hello: %v", err)
	}
	resp.Body.Close()
	p.csrf = hi.CSRF
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/ui/api/sessions/default/events", nil)
	resp, err = p.c.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the event stream: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	p.r = bufio.NewReader(resp.Body)
	p.until("nodes") // the stream is open: the page is watched
	return p
}

// until reads the stream up to the next event named event, and returns
// its data.
func (p *page) until(event string) json.RawMessage {
	p.t.Helper()
	var ev string
	for {
		line, err := p.r.ReadString('\n')
		if err != nil {
			p.t.Fatalf("reading the page's events for %s: %v", event, err)
		}
		line = strings.TrimSuffix(line, "\n")
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			ev = e
		} else if data, ok := strings.CutPrefix(line, "data: "); ok && ev == event {
			return json.RawMessage(data)
		}
	}
}

func (p *page) answer(id, answer string) (int, string) {
	p.t.Helper()
	req, _ := http.NewRequest("POST", p.base+"/ui/api/sessions/default/approvals/"+id, strings.NewReader(`{"answer":"`+answer+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", p.base)
	req.Header.Set(dashboard.CSRFHeader, p.csrf)
	resp, err := p.c.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestApprovalFirstAnswerWins: a held call is offered to the Commander
// and shown on the dashboard at once; the first answer decides, the
// other place's request goes saying who answered, in how long and what,
// and the call log names who decided.
func TestApprovalFirstAnswerWins(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "calls.jsonl")
	d, err := New(&Options{Registry: testRegistry(), CallLog: logPath})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	c := client.New(client.Options{Socket: serveSocket(t, d)})
	defer c.Close()
	cs := c.Session("default")
	ctx := t.Context()
	if _, err := cs.Add(ctx, node.Spec{ID: "echo", Kind: identity.Kind}); err != nil {
		t.Fatal(err)
	}
	s, err := d.session(ctx, "default", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetSettings(session.Settings{Policy: "echo.*=ask"}); err != nil {
		t.Fatal(err)
	}
	commander, err := cs.AttachCommander(ctx, "echo", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer commander.Close()
	lines := make(chan api.AttachLine, 16)
	go func() {
		for {
			l, err := commander.Next()
			if err != nil {
				return
			}
			lines <- l
		}
	}()
	pg := openPage(t, d)

	// hold makes an agent's call and returns its prompt on the page, the
	// request the Commander must answer, and the call's result to come.
	hold := func(text string) (string, api.AttachLine, <-chan *mcp.CallToolResult) {
		t.Helper()
		res := make(chan *mcp.CallToolResult, 1)
		go func() {
			actx := node.WithCaller(context.Background(), node.Caller{Kind: node.CallerMCP, Name: "agent"})
			r, err := s.Call(actx, "echo", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"text":"` + text + `"}`)})
			if err != nil {
				r = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
			}
			res <- r
		}()
		// The Commander's person is idle: it passes the offer on, and is
		// then asked as the one who must answer.
		offer := nextLine(t, lines, api.AttachOfferElicit)
		if err := commander.Answer(ctx, offer.ID, nil, errors.New(api.AttachPass)); err != nil {
			t.Fatal(err)
		}
		asked := nextLine(t, lines, api.AttachElicit)
		var p struct{ ID, Node, Tool, Arguments string }
		if err := json.Unmarshal(pg.until("approval"), &p); err != nil || p.Node != "echo" || !strings.Contains(p.Arguments, text) {
			t.Fatalf("the page shows %+v (%v)", p, err)
		}
		return p.ID, asked, res
	}

	// The dashboard first: the Commander's dialog is withdrawn.
	id, asked, res := hold("from the page")
	if st, body := pg.answer(id, "allow"); st != http.StatusOK {
		t.Fatalf("the page's answer: %d %s", st, body)
	}
	if r := <-res; r.IsError {
		t.Errorf("allowed on the page: %v", r.Content)
	}
	w := nextLine(t, lines, api.AttachWithdrawn)
	if w.ID != asked.ID || !strings.HasPrefix(w.Reason, "answered by the dashboard in ") || !strings.HasSuffix(w.Reason, ": allowed once") {
		t.Errorf("the Commander's request went with %+v", w)
	}
	if err := commander.Answer(ctx, asked.ID, &mcp.ElicitResult{Action: "decline"}, nil); err == nil {
		t.Error("the Commander's answer after the page's was taken")
	}

	// The Commander first: the page's prompt goes, and its answer is
	// refused.
	id, asked, res = hold("from the Commander")
	if err := commander.Answer(ctx, asked.ID, &mcp.ElicitResult{Action: "decline"}, nil); err != nil {
		t.Fatal(err)
	}
	if r := <-res; !r.IsError || !strings.Contains(r.Content[0].(*mcp.TextContent).Text, "(at repl) refused it") {
		t.Errorf("denied at the Commander: %v", r.Content)
	}
	var closed struct {
		ID       string
		Answered bool
		Why      string
	}
	if err := json.Unmarshal(pg.until("approval_closed"), &closed); err != nil {
		t.Fatal(err)
	}
	if closed.ID != id || !closed.Answered || !strings.HasPrefix(closed.Why, "answered by the Commander in ") || !strings.HasSuffix(closed.Why, ": denied") {
		t.Errorf("the page's prompt went with %+v", closed)
	}
	if st, body := pg.answer(id, "allow"); st != http.StatusConflict || !strings.Contains(body, "answered by the Commander") {
		t.Errorf("the page's answer after the Commander's: %d %s, want 409", st, body)
	}

	var by []string
	testutil.WaitFor(t, 10*time.Second, func() bool {
		b, _ := os.ReadFile(logPath)
		by = by[:0]
		for line := range strings.Lines(string(b)) {
			var r CallRecord
			if json.Unmarshal([]byte(line), &r) == nil && r.Policy != nil {
				by = append(by, r.Policy.Outcome+" by "+r.Policy.By)
			}
		}
		return len(by) == 2
	}, "the two calls in the call log")
	if got := strings.Join(by, ", "); got != "approved by dashboard, denied by repl" {
		t.Errorf("the call log's decisions: %s", got)
	}
}

// TestApprovalNobodyThere: no client that can be asked, no Commander, no
// page open: the call is refused at once, naming where to approve.
func TestApprovalNobodyThere(t *testing.T) {
	d, err := New(&Options{Registry: testRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	s, err := d.session(t.Context(), "default", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(t.Context(), node.Spec{ID: "echo", Kind: identity.Kind}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSettings(session.Settings{Policy: "echo.*=ask", AskTimeout: api.Duration(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	actx := node.WithCaller(t.Context(), node.Caller{Kind: node.CallerMCP, Name: "agent"})
	r, err := s.Call(actx, "echo", &node.CallRequest{Tool: "identity", Arguments: json.RawMessage(`{"text":"x"}`)})
	if err != nil || !r.IsError || !strings.Contains(r.Content[0].(*mcp.TextContent).Text, "Open the Commander (`nerve`) or the dashboard (`nerve ui`)") {
		t.Errorf("with nobody there: %v, %v", r, err)
	}
}

func TestAnsweredSays(t *testing.T) {
	for _, tt := range []struct {
		by    string
		after time.Duration
		a     session.Approval
		want  string
	}{
		{"dashboard", 31400 * time.Microsecond, session.Approval{Allow: true}, "answered by the dashboard in 31ms: allowed once"},
		{"repl", 1234 * time.Millisecond, session.Approval{}, "answered by the Commander in 1.2s: denied"},
		{"mcp:claude-code", 65400 * time.Millisecond, session.Approval{Allow: true, Remember: true}, "answered by mcp:claude-code in 1m5s: allowed, and the same call for 10 minutes"},
	} {
		if got := (&answered{by: tt.by, after: tt.after, a: tt.a}).Error(); got != tt.want {
			t.Errorf("%q; want %q", got, tt.want)
		}
	}
}
