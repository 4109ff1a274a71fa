package repl

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/commander"
	"github.com/nerve-dev/nerve/pkg/api"
)

// everythingForm is the form of server-everything's
// trigger-elicitation-request (2026.8.31), shortened, as the daemon passes
// it on: keys sorted, as Go marshals a map.
const everythingForm = `{"type":"object","required":["name"],"properties":{
 "check":{"title":"Boolean","type":"boolean","description":"Agree to the terms and conditions"},
 "email":{"title":"String with email format","type":"string","format":"email"},
 "firstLine":{"title":"String with default","type":"string","default":"It was a dark and stormy night."},
 "integer":{"title":"Integer","type":"integer","minimum":1,"maximum":100,"default":42},
 "legacyTitledEnum":{"type":"string","enum":["pet-1","pet-2"],"enumNames":["Cats","Dogs"],"default":"pet-1"},
 "name":{"title":"String","type":"string","description":"Your full, legal name"},
 "titledMultipleSelectEnum":{"type":"array","minItems":1,"maxItems":2,"items":{"anyOf":[{"const":"fish-1","title":"Tuna"},{"const":"fish-2","title":"Salmon"},{"const":"fish-3","title":"Trout"}]},"default":["fish-1"]},
 "titledSingleSelectEnum":{"type":"string","oneOf":[{"const":"hero-1","title":"Superman"},{"const":"hero-2","title":"Green Lantern"}],"default":"hero-1"},
 "untitledSingleSelectEnum":{"type":"string","enum":["Monica","Rachel","Joey"],"default":"Monica"}}}`

func formFields(t *testing.T) map[string]*formField {
	t.Helper()
	fields, err := parseForm(json.RawMessage(everythingForm))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	m := map[string]*formField{}
	for _, f := range fields {
		names = append(names, f.Name)
		m[f.Name] = f
	}
	// Required fields first, then the order of the schema.
	want := []string{"name", "check", "email", "firstLine", "integer", "legacyTitledEnum", "titledMultipleSelectEnum", "titledSingleSelectEnum", "untitledSingleSelectEnum"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("fields are asked in the order %v; want %v", names, want)
	}
	return m
}

func TestFormFieldParse(t *testing.T) {
	fields := formFields(t)
	tests := []struct {
		field, in string
		want      any
		err       string // part of the message shown to the person; "" = valid
	}{
		{"name", "Ada Lovelace", "Ada Lovelace", ""},
		{"name", "", nil, "this field is required"},
		{"firstLine", "", "It was a dark and stormy night.", ""},
		{"firstLine", "Call me Ishmael.", "Call me Ishmael.", ""},
		{"check", "y", true, ""},
		{"check", "No", false, ""},
		{"check", "maybe", nil, "type y or n"},
		{"check", "", nil, "left out"},
		{"email", "ada@example.com", "ada@example.com", ""},
		{"email", "ada", nil, "is not an email address"},
		{"integer", "", float64(42), ""},
		{"integer", "7", int64(7), ""},
		{"integer", "7.5", nil, "not a whole number"},
		{"integer", "101", nil, "above the maximum 100"},
		{"integer", "seven", nil, `"seven" is not a number`},
		{"untitledSingleSelectEnum", "3", "Joey", ""},
		{"untitledSingleSelectEnum", "rachel", "Rachel", ""},
		{"untitledSingleSelectEnum", "", "Monica", ""},
		{"untitledSingleSelectEnum", "4", nil, "type a number from 1 to 3"},
		{"titledSingleSelectEnum", "Green Lantern", "hero-2", ""},
		{"titledSingleSelectEnum", "1", "hero-1", ""},
		{"legacyTitledEnum", "dogs", "pet-2", ""},
		{"titledMultipleSelectEnum", "1, 3", []any{"fish-1", "fish-3"}, ""},
		{"titledMultipleSelectEnum", "Salmon,2", []any{"fish-2"}, ""},
		{"titledMultipleSelectEnum", "1,2,3", nil, "choose at most 2"},
		{"titledMultipleSelectEnum", "", []any{"fish-1"}, ""},
	}
	for _, tt := range tests {
		got, err := fields[tt.field].parse(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: %q gave %v, %v; want the error %q", tt.field, tt.in, got, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("%s: %q: %v", tt.field, tt.in, err)
		case tt.err == "" && !reflect.DeepEqual(got, tt.want):
			t.Errorf("%s: %q = %#v; want %#v", tt.field, tt.in, got, tt.want)
		}
	}
}

func TestRenderFieldShowsChoicesAndDefault(t *testing.T) {
	fields := formFields(t)
	tests := []struct {
		field string
		want  []string
	}{
		{"name", []string{"(1/9) name — String · required · text", "Your full, legal name"}},
		{"titledSingleSelectEnum", []string{"optional · a number or a value", "1) Superman (hero-1)  2) Green Lantern (hero-2)", "Enter keeps the default: Superman (hero-1)"}},
		{"titledMultipleSelectEnum", []string{"1 to 2 of the numbers", "3) Trout (fish-3)", "default: Tuna (fish-1)"}},
		{"integer", []string{"a whole number from 1 to 100", "default: 42"}},
		{"check", []string{"y or n", "Enter leaves it out"}},
	}
	for _, tt := range tests {
		got := renderField(commander.NewStyle(false), fields[tt.field], 1, 9)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("field %s is shown as\n%s\nwhich lacks %q", tt.field, got, w)
			}
		}
	}
}

func TestParseFormRefusesWhatAFormCannotAsk(t *testing.T) {
	for _, schema := range []string{
		`{"properties":{"a":{"type":"object"}}}`,
		`{"properties":{"a":{"type":"array","items":{"type":"string"}}}}`,
		`{"properties":[1]}`,
	} {
		if _, err := parseForm(json.RawMessage(schema)); err == nil {
			t.Errorf("parseForm(%s) succeeded; want an error", schema)
		}
	}
	if f, err := parseForm(nil); err != nil || f != nil {
		t.Errorf("parseForm(nil) = %v, %v; want no fields", f, err)
	}
}

func TestElicitResults(t *testing.T) {
	values := map[string]any{"name": "Ada", "untitledSingleSelectEnum": "Joey"}
	res := elicitAccept(values)
	b, _ := json.Marshal(res)
	if want := `{"action":"accept","content":{"name":"Ada","untitledSingleSelectEnum":"Joey"}}`; string(b) != want {
		t.Errorf("accepted form = %s; want %s", b, want)
	}
	values["name"] = "changed"
	if res.Content["name"] != "Ada" {
		t.Error("the result shares its map with the form being edited")
	}
	for _, c := range []struct {
		res  *mcp.ElicitResult
		want string
	}{{elicitDecline(), `{"action":"decline"}`}, {elicitCancel(), `{"action":"cancel"}`}} {
		if b, _ := json.Marshal(c.res); string(b) != c.want {
			t.Errorf("got %s; want %s", b, c.want)
		}
	}
	if got := declined("sample", "x"); got.err == nil || !strings.Contains(got.err.Error(), "declined") {
		t.Errorf("a declined sampling request answers %v; want an error saying declined", got)
	}
}

func TestRenderSampling(t *testing.T) {
	p := &mcp.CreateMessageParams{
		SystemPrompt: "You are a helpful test server.",
		Messages: []*mcp.SamplingMessage{
			{Role: "user", Content: &mcp.TextContent{Text: "What is\nthe capital?"}},
			{Role: "assistant", Content: &mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 2048)}},
		},
		MaxTokens:        100,
		Temperature:      0.7,
		ModelPreferences: &mcp.ModelPreferences{Hints: []*mcp.ModelHint{{Name: "claude-3"}}, IntelligencePriority: 0.8},
	}
	tests := []struct {
		samplingNode string
		want, not    []string
	}{
		{"", []string{
			"? @ev asks for a model's answer (sampling)",
			"system: You are a helpful test server.",
			"user: What is\n    the capital?",
			"assistant: [image image/png, 2.0 KB]",
			"max tokens 100 · temperature 0.7 · prefers model like claude-3, intelligence 0.8",
			"[t] type the answer  [d] decline",
		}, []string{"[a]"}},
		{"gpt", []string{"[a] answer with @gpt  [t] type the answer  [d] decline"}, nil},
	}
	for _, tt := range tests {
		got := renderSampling(commander.NewStyle(false), "ev", p, tt.samplingNode)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("sampling request shown as\n%s\nlacks %q", got, w)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(got, w) {
				t.Errorf("sampling request shown as\n%s\nhas %q", got, w)
			}
		}
	}
}

// TestWakeReader: a wake-up ends a Read blocked on the terminal with a
// Ctrl-C, and the terminal's bytes still arrive in order.
func TestWakeReader(t *testing.T) {
	pr, pw := io.Pipe()
	w := newWakeReader(pr)
	defer w.Close()
	defer pw.Close()
	w.Wake()
	buf := make([]byte, 8)
	if n, err := w.Read(buf); err != nil || string(buf[:n]) != "\x03" {
		t.Fatalf("Read after Wake = %q, %v; want Ctrl-C", buf[:n], err)
	}
	go pw.Write([]byte("hello"))
	var got []byte
	for len(got) < 5 {
		n, err := w.Read(buf[:3])
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != "hello" {
		t.Errorf("read %q; want hello", got)
	}
}

// TestAskerTellsWakeUpsFromCtrlC: an interrupt the asker caused is not the
// person's Ctrl-C, even when it arrives a Readline late.
func TestAskerTellsWakeUpsFromCtrlC(t *testing.T) {
	k := &asker{ready: make(chan struct{}, 1), pending: map[askKey]*ask{}}
	wakes := 0
	k.wake = func() { wakes++ }
	q := newAsk(context.Background(), "ev", api.AttachLine{Kind: api.AttachSample, ID: "1"})

	k.beginRead()
	k.enqueue(q)
	if wakes != 1 {
		t.Fatalf("a request during Readline woke it %d times; want 1", wakes)
	}
	if !k.endRead(true) {
		t.Error("the wake-up's interrupt was taken for Ctrl-C")
	}
	if k.take() != q || k.take() != nil {
		t.Error("the queue does not give back the request once")
	}

	// The person pressed Enter just before the wake-up was read.
	k.beginRead()
	k.enqueue(q)
	if k.endRead(false) {
		t.Error("a line ended by Enter was taken for a wake-up")
	}
	k.beginRead()
	if !k.endRead(true) {
		t.Error("the late wake-up ended the next Readline as if it were Ctrl-C")
	}
	k.beginRead()
	if k.endRead(true) {
		t.Error("the person's own Ctrl-C was taken for a wake-up")
	}
	k.take()

	// Not reading: no wake-up; the loop asks before its next Readline.
	k.enqueue(q)
	if wakes != 2 {
		t.Errorf("a request outside Readline woke it (%d wake-ups; want 2)", wakes)
	}
}

// TestAskerWithdraw: a withdrawn request leaves the queue with one notice;
// one whose dialog is on screen has its Readline ended by a wake-up, and
// the dialog's next read refuses; one already answered gets the notice;
// and the completer offers nothing while a dialog is on screen.
func TestAskerWithdraw(t *testing.T) {
	var out bytes.Buffer
	r := &repl{out: &out, style: commander.NewStyle(false)}
	k := &asker{r: r, ctx: context.Background(), ready: make(chan struct{}, 1), pending: map[askKey]*ask{}}
	wakes := 0
	k.wake = func() { wakes++ }
	line := func(id string) api.AttachLine { return api.AttachLine{Kind: api.AttachElicit, ID: id} }

	tests := []struct {
		name      string
		state     func(q *ask) // brings q where the test withdraws it
		queued    bool         // q is still in the queue after the withdrawal
		notice    bool         // the notice is printed by the asker
		wakeUps   int          // wake-ups the withdrawal caused
		readAfter bool         // the dialog may read another line
	}{
		{"queued", func(q *ask) { k.enqueue(q) }, false, true, 0, false},
		{"showing, reading", func(q *ask) {
			k.enqueue(q)
			if k.take() != q {
				t.Fatal("take did not give the request")
			}
			if !k.beginAskRead(q) {
				t.Fatal("a dialog may not read before the withdrawal")
			}
		}, false, false, 1, false},
		{"showing, between reads", func(q *ask) { k.enqueue(q); k.take() }, false, false, 0, false},
		{"answered", func(q *ask) { k.enqueue(q); k.take(); k.answered(q) }, false, true, 0, false},
		{"another node's request", func(q *ask) { k.enqueue(q) }, true, false, 0, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out.Reset()
			wakes = 0
			k.queue, k.showing, k.reading, k.woken = nil, nil, false, false
			from := "ev"
			if tt.name == "another node's request" {
				from = "other" // the same id from another node is another request
			}
			q := k.arrive(from, line(string(rune('a'+i))))
			tt.state(q)
			if tt.name == "showing, reading" && !k.answering() {
				t.Error("the asker does not know a dialog is on screen")
			}
			k.withdraw("ev", q.id, "the call ended")
			if got := slices.Contains(k.queue, q); got != tt.queued {
				t.Errorf("in the queue after the withdrawal: %v; want %v", got, tt.queued)
			}
			const notice = "! @ev withdrew its request: the call ended\n"
			if got := out.String() == notice; got != tt.notice {
				t.Errorf("printed %q; want the notice: %v", out.String(), tt.notice)
			}
			if wakes != tt.wakeUps {
				t.Errorf("%d wake-ups; want %d", wakes, tt.wakeUps)
			}
			k.endRead(tt.wakeUps > 0)
			if got := k.beginAskRead(q); got != tt.readAfter {
				t.Errorf("the dialog may read on: %v; want %v", got, tt.readAfter)
			}
			k.endRead(false)
			if w := q.withdrawn(); (w == nil) == !tt.readAfter {
				t.Errorf("withdrawn() = %v", w)
			}
		})
	}

	// A request withdrawn before it was queued (an offer being decided)
	// never shows, and one line says it is gone.
	out.Reset()
	k.queue = nil
	q := k.arrive("ev", line("late"))
	k.withdraw("ev", "late", "the server cancelled it")
	if k.enqueue(q) || len(k.queue) != 0 {
		t.Error("a withdrawn request was queued")
	}
	if want := "! @ev withdrew its request: the server cancelled it\n"; out.String() != want {
		t.Errorf("printed %q; want %q", out.String(), want)
	}

	// A call held for approval, answered elsewhere first: the notice
	// names the call and who answered.
	out.Reset()
	approval := line("held")
	approval.Params = json.RawMessage(`{"_meta":{"dev.nerve/approval":{"caller":"mcp:agent","node":"fs","tool":"write_file"}}}`)
	q = k.arrive("ev", approval)
	k.enqueue(q)
	k.withdraw("ev", "held", "answered by the dashboard in 1.2s: allowed once")
	if want := "! mcp:agent's call to @fs write_file no longer waits for you: answered by the dashboard in 1.2s: allowed once\n"; out.String() != want {
		t.Errorf("printed %q; want %q", out.String(), want)
	}

	// The completer offers nothing while a dialog is on screen.
	c := &answerCompleter{k: k, inner: fakeCompleter{}}
	k.showing = nil
	if got, _ := c.Do([]rune("@f"), 2); len(got) != 1 {
		t.Errorf("at the prompt the completer offers %q; want the inner one's", got)
	}
	k.showing = q
	if got, _ := c.Do([]rune("@f"), 2); len(got) != 0 {
		t.Errorf("during an answer the completer offers %q; want nothing", got)
	}
}

type fakeCompleter struct{}

func (fakeCompleter) Do([]rune, int) ([][]rune, int) { return [][]rune{[]rune("x ")}, 2 }
