package repl

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/callview"
	"github.com/nerve-dev/nerve/internal/commander"
	"github.com/nerve-dev/nerve/internal/syncs"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/client/mcpclient"
	"github.com/nerve-dev/nerve/pkg/node"
)

// spinnerDelay is how long a call runs before the REPL shows it is waiting.
const spinnerDelay = 200 * time.Millisecond

// cancelGrace is how long after Ctrl-C the REPL waits for the call to come
// back cancelled before it returns to the prompt anyway.
const cancelGrace = 800 * time.Millisecond

// call runs one tool call: a status line while it runs (spinner, elapsed
// time, progress bar), streamed text as it arrives, Ctrl-C to cancel, and
// the result rendered with its block number.
func (r *repl) call(ctx context.Context, ln *commander.Line) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st := &status{r: r, label: "@" + ln.Node + " " + ln.Tool, start: time.Now()}

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := mcpclient.Call(cctx, r.session, ln.Node, ln.Tool, ln.Args, st.event)
		done <- outcome{res, err}
	}()

	sigs, stopSigs := interrupts()
	defer stopSigs()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	r.asks.beginCall()
	defer r.asks.endCall()
	for {
		select {
		case <-r.asks.ready:
			// A server asks the person, most likely because of this call.
			st.pause(true)
			r.answerWaiting(ctx)
			st.pause(false)
			// Ctrl-C while answering declined the request, not the call.
			for len(sigs) > 0 {
				<-sigs
			}
		case o := <-done:
			st.clear()
			r.show(ln, o.res, o.err, time.Since(st.start), st.streamedText())
			return
		case <-sigs:
			cancel()
			st.clear()
			fmt.Fprintln(r.errOut, paint(r.style, r.style.Yellow, fmt.Sprintf("^C — cancelled %s", st.label)))
			select {
			case o := <-done:
				if o.err == nil && o.res != nil {
					// The node answered before the cancel reached it.
					r.show(ln, o.res, nil, time.Since(st.start), st.streamedText())
				}
			case <-time.After(cancelGrace):
				// The call goroutine ends when the daemon drops the call;
				// done is buffered, so it never blocks.
			}
			return
		case <-tick.C:
			st.draw()
		}
	}
}

// show prints a call's result (or error) and numbers it as a block.
func (r *repl) show(ln *commander.Line, res *mcp.CallToolResult, err error, took time.Duration, st streamed) {
	if err != nil {
		r.printErr(err)
		return
	}
	opts := commander.RenderOptions{Style: r.style, HideStructuredBesideText: true}
	rd := commander.RenderResult(res, opts)
	if st.gap {
		// What was streamed has holes: it is neither shown as the output
		// nor saved as it; the result, which is whole, is.
		fmt.Fprintln(r.out, paint(r.style, r.style.Dim, "(this terminal fell behind and missed some of the streamed text; the whole result follows)"))
		st = streamed{}
	}
	if st.cut {
		r.showStreamCut(st)
	}
	if rest, ok := afterStreamed(res, st.text); ok {
		// The text was shown as it arrived: show only what it lacks.
		value := rd.Value
		rd = commander.RenderResult(rest, opts)
		rd.Value = value
		if len(rest.Content) == 0 && !rest.IsError {
			rd.Text = ""
		}
	}
	var saved []string
	fullPath := ""
	if len(rd.Attachments) > 0 || rd.Truncated {
		dir := filepath.Join(r.outDir, time.Now().Format("20060102-150405.000"))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			r.printErr(fmt.Errorf("saving the result's files: %w", err))
		} else {
			for _, a := range rd.Attachments {
				p := filepath.Join(dir, a.Name)
				if err := os.WriteFile(p, a.Data, 0o600); err != nil {
					r.printErr(fmt.Errorf("saving %s: %w", a.Name, err))
				}
				saved = append(saved, p)
			}
			if rd.Truncated {
				fullPath = filepath.Join(dir, "output.txt")
				if err := os.WriteFile(fullPath, []byte(rd.Full), 0o600); err != nil {
					r.printErr(fmt.Errorf("saving the whole output: %w", err))
				}
			}
		}
		rd.Fill(saved, fullPath)
	}
	n := r.history.Add(ln.Node, rd.Value)
	if rd.IsError {
		fmt.Fprint(r.errOut, rd.Text)
	} else {
		fmt.Fprint(r.out, rd.Text)
	}
	fmt.Fprintln(r.out, paint(r.style, r.style.Dim, fmt.Sprintf("[%d] @%s %s · %s", n, ln.Node, ln.Tool, callview.Duration(took))))
}

// showStreamCut says how much streamed text was not printed and saves all
// of it to a file, as a long result is.
func (r *repl) showStreamCut(st streamed) {
	line := fmt.Sprintf("… %d more bytes streamed (%d in all)", len(st.text)-st.printed, len(st.text))
	dir := filepath.Join(r.outDir, time.Now().Format("20060102-150405.000"))
	p := filepath.Join(dir, "output.txt")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		r.printErr(fmt.Errorf("saving the whole output: %w", err))
	} else if err := os.WriteFile(p, []byte(st.text), 0o600); err != nil {
		r.printErr(fmt.Errorf("saving the whole output: %w", err))
	} else {
		line += "; all of it is in " + p
	}
	fmt.Fprintln(r.out, paint(r.style, r.style.Dim, line))
}

// status is the line that shows a call in flight. Streamed text is printed
// above it as it arrives.
type status struct {
	r     *repl
	label string
	start time.Time

	// mu guards the fields below; events arrive on the client's goroutine.
	mu       sync.Mutex
	shown    bool // the status line is on screen
	progress float64
	total    float64
	message  string
	midLine  bool // streamed text ended without a newline
	streamed strings.Builder
	printed  int  // bytes of streamed text printed
	cut      bool // streamed text past commander.DefaultMaxBytes was not printed
	gap      bool // the daemon dropped events this terminal did not read in time
	frame    int
	paused   bool     // a request from a server is being answered
	held     []string // log and step lines held back meanwhile
	graph    graphSteps
	steps    callview.Steps // an agent's steps, worded
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (s *status) event(l api.CallLine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch l.Kind {
	case node.EventProgress:
		s.progress, s.total, s.message = l.Progress, l.Total, l.Message
		s.drawLocked()
	case node.EventText:
		s.streamed.WriteString(l.Text)
		if s.cut {
			return
		}
		s.clearLocked()
		text := l.Text
		if room := commander.DefaultMaxBytes - s.printed; len(text) > room {
			// As a result is: cut at a line end; show says where all of
			// it is when the call ends.
			if i := strings.LastIndexByte(text[:max(room, 0)], '\n'); i >= 0 {
				text = text[:i+1]
			} else {
				text = ""
			}
			s.cut = true
		}
		fmt.Fprint(s.r.out, text)
		s.printed += len(text)
		if text != "" {
			s.midLine = !strings.HasSuffix(text, "\n")
		}
	case node.EventLog:
		if l.Skipped > 0 {
			s.gap = true // the streamed text lacks what the daemon dropped
		}
		data := strings.TrimSpace(string(l.Data))
		s.sideLineLocked(fmt.Sprintf("[%s] %s", l.Level, data))
	case node.EventStep:
		if l.Step == "graph" {
			s.graph.update(l.Data)
		}
		if line := s.stepLine(l); line != "" {
			s.sideLineLocked(line)
		}
	}
}

// sideLineLocked prints a log or step line, or holds it back while the
// person answers a request (it would land in the middle of their answer).
func (s *status) sideLineLocked(line string) {
	syncs.AssertLocked(&s.mu)
	if s.paused {
		s.held = append(s.held, line)
		return
	}
	s.clearLocked()
	s.endTextLocked()
	fmt.Fprintln(s.r.errOut, paint(s.r.style, s.r.style.Dim, line))
}

// stepLine is one line for a graph's step or an agent's (a tool call, its
// result, thinking, tokens used), or "" for a step not worth a line.
func (s *status) stepLine(l api.CallLine) string {
	if l.Step == "graph" {
		var ev api.StepEvent
		if json.Unmarshal(l.Data, &ev) == nil && ev.State == api.StepAsked && strings.Contains(ev.Reason, "("+whoAmI()+")") {
			return "" // the question is on this screen
		}
		return callview.GraphStepLine(l.Data)
	}
	return s.steps.Line(l.Step, l.Data)
}

func (s *status) draw() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drawLocked()
}

// pause stops drawing the status line while the person answers a request.
func (s *status) pause(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.clearLocked()
		s.endTextLocked()
	}
	s.paused = on
	if !on {
		held := s.held
		s.held = nil
		for _, line := range held {
			s.sideLineLocked(line)
		}
	}
}

func (s *status) drawLocked() {
	syncs.AssertLocked(&s.mu)
	elapsed := time.Since(s.start)
	if elapsed < spinnerDelay || s.midLine || s.paused {
		return
	}
	s.frame++
	line := fmt.Sprintf("%s %s %s", spinnerFrames[s.frame%len(spinnerFrames)], s.label, elapsed.Round(100*time.Millisecond))
	if s.total > 0 || s.progress > 0 {
		line += " " + progressBar(s.progress, s.total)
	}
	if s.message != "" {
		line += " " + s.message
	}
	if g := s.graph.String(); g != "" {
		line += " · " + g
	}
	fmt.Fprint(s.r.errOut, "\r\x1b[K"+paint(s.r.style, s.r.style.Dim, line))
	s.shown = true
}

func (s *status) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearLocked()
	s.endTextLocked()
}

func (s *status) clearLocked() {
	syncs.AssertLocked(&s.mu)
	if s.shown {
		fmt.Fprint(s.r.errOut, "\r\x1b[K")
		s.shown = false
	}
}

// endTextLocked ends a line of streamed text so what follows starts clean.
func (s *status) endTextLocked() {
	syncs.AssertLocked(&s.mu)
	if s.midLine {
		fmt.Fprintln(s.r.out)
		s.midLine = false
	}
}

// progressBar draws progress out of total as a 20-cell bar and a
// percentage; without a total it shows the count.
func progressBar(progress, total float64) string {
	if total <= 0 {
		return fmt.Sprintf("[%g]", progress)
	}
	frac := min(max(progress/total, 0), 1)
	const width = 20
	full := int(frac * width)
	return fmt.Sprintf("[%s%s] %3.0f%%", strings.Repeat("█", full), strings.Repeat("░", width-full), frac*100)
}

// streamedText returns the text streamed so far and how much of it was
// printed (less than all when it was cut).
func (s *status) streamedText() streamed {
	s.mu.Lock()
	defer s.mu.Unlock()
	return streamed{text: s.streamed.String(), printed: s.printed, cut: s.cut, gap: s.gap}
}

// streamed is the text a call streamed while it ran.
type streamed struct {
	text    string
	printed int
	cut     bool
	gap     bool // the daemon dropped some of it: only the result is whole
}

// afterStreamed returns res without the text that was already streamed
// while the call ran, when its text content begins with that text.
func afterStreamed(res *mcp.CallToolResult, streamed string) (*mcp.CallToolResult, bool) {
	if streamed == "" || res == nil {
		return nil, false
	}
	var text strings.Builder
	for _, b := range res.Content {
		if t, ok := b.(*mcp.TextContent); ok {
			text.WriteString(t.Text)
		}
	}
	rest, ok := strings.CutPrefix(text.String(), streamed)
	if !ok {
		rest, ok = strings.CutPrefix(text.String(), strings.TrimRight(streamed, "\n"))
	}
	if !ok {
		return nil, false
	}
	c := *res
	c.Content = nil
	c.StructuredContent = nil // it stood beside text, which people read
	if rest = strings.TrimLeft(rest, "\n"); rest != "" {
		c.Content = append(c.Content, &mcp.TextContent{Text: rest})
	}
	for _, b := range res.Content {
		if _, ok := b.(*mcp.TextContent); !ok {
			c.Content = append(c.Content, b)
		}
	}
	return &c, true
}
