package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/session"
)

// fakeClient is the client end of one attach stream: it records the lines
// it is sent and answers each request as answer says.
type fakeClient struct {
	name   string
	answer func(kind string) api.AttachAnswer
	log    *[]string
	mu     *sync.Mutex
	header http.Header
}

func (c *fakeClient) Header() http.Header { return c.header }
func (c *fakeClient) WriteHeader(int)     {}
func (c *fakeClient) Flush()              {}
func (c *fakeClient) Write(b []byte) (int, error) {
	var line api.AttachLine
	if err := json.Unmarshal(b, &line); err != nil {
		return 0, err
	}
	c.mu.Lock()
	*c.log = append(*c.log, c.name+":"+line.Kind)
	c.mu.Unlock()
	if v, ok := pendingAnswers.LoadAndDelete(line.ID); ok {
		v.(chan api.AttachAnswer) <- c.answer(line.Kind)
	}
	return len(b), nil
}

func sampleAnswer(model string) api.AttachAnswer {
	b, _ := json.Marshal(&mcp.CreateMessageResult{Model: model, Role: "assistant", Content: &mcp.TextContent{Text: "hi"}})
	return api.AttachAnswer{Result: b}
}

// TestAttachRouting: a Commander that is calling takes a request; an idle
// one passes it to `nerve mcp serve --node`, and answers it only when
// nobody else is attached.
func TestAttachRouting(t *testing.T) {
	calling := func(string) api.AttachAnswer { return sampleAnswer("repl") }
	idle := func(kind string) api.AttachAnswer {
		if kind == api.AttachOfferSample {
			return api.AttachAnswer{Error: api.AttachPass}
		}
		return sampleAnswer("idle-repl")
	}
	serve := func(string) api.AttachAnswer { return sampleAnswer("mcp-serve") }
	tests := []struct {
		name    string
		members []string // r: calling REPL, i: idle REPL, s: mcp serve; in attach order
		model   string
		lines   string
	}{
		{"calling REPL before mcp serve", []string{"s", "r"}, "repl", "r:offer_sample"},
		{"idle REPL passes to mcp serve", []string{"i", "s"}, "mcp-serve", "i:offer_sample s:sample"},
		{"the calling one of two REPLs", []string{"r", "i"}, "repl", "i:offer_sample r:offer_sample"},
		{"only an idle REPL must answer", []string{"i"}, "idle-repl", "i:offer_sample i:sample"},
		{"latest mcp serve wins", []string{"s", "s"}, "mcp-serve", "s2:sample"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var log []string
			g := &attachGroup{}
			for i, m := range tt.members {
				c := &fakeClient{name: m, log: &log, mu: &mu, header: http.Header{}}
				if i == 1 && tt.members[0] == m {
					c.name = m + "2"
				}
				c.answer = map[string]func(string) api.AttachAnswer{"r": calling, "i": idle, "s": serve}[m]
				g.members = append(g.members, newStreamAttachment(context.Background(), c, m != "s"))
			}
			res, err := g.Sample(context.Background(), "ev", &mcp.CreateMessageParams{MaxTokens: 5})
			if err != nil {
				t.Fatal(err)
			}
			if res.Model != tt.model {
				t.Errorf("answered by %q; want %q", res.Model, tt.model)
			}
			if got := strings.Join(log, " "); got != tt.lines {
				t.Errorf("lines sent: %s; want %s", got, tt.lines)
			}
		})
	}
	if _, err := (&attachGroup{}).Sample(context.Background(), "ev", &mcp.CreateMessageParams{}); !errors.Is(err, session.ErrNoOneToAsk) {
		t.Errorf("nobody attached: %v; want ErrNoOneToAsk", err)
	}
}

// TestSampleRouteRefusesANodeThatCannotSample: the error names the node's
// kind and says what to use instead.
func TestSampleRouteRefusesANodeThatCannotSample(t *testing.T) {
	d, err := New(&Options{Registry: testRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	sock := serveSocket(t, d)
	hc := socketClient(t, sock)
	post := func(path, body string) (int, api.ErrorBody) {
		resp, err := hc.Post("http://nerve"+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e api.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e
	}
	if st, e := post("/v1/sessions/default/nodes", `{"id":"id","kind":"identity"}`); st != http.StatusCreated && st != http.StatusOK {
		t.Fatalf("adding a node: %d %+v", st, e)
	}
	msg := `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}`
	st, e := post("/v1/sessions/default/nodes/id/sample", msg)
	if st != http.StatusBadRequest || !strings.Contains(e.Error.Message, `node "id" (kind identity) cannot answer sampling requests; name an llm node`) {
		t.Errorf("sampling with an identity node: %d %q; want 400 saying to name an llm node", st, e.Error.Message)
	}
	if st, e := post("/v1/sessions/default/nodes/nope/sample", msg); st != http.StatusNotFound {
		t.Errorf("sampling with a missing node: %d %q; want 404", st, e.Error.Message)
	}
}
