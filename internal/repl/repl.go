// Package repl is the Commander: nerve's readline REPL on one session.
// It parses lines with internal/commander, reaches the session only through
// pkg/client, shows calls as they run (status line, streamed text, Ctrl-C
// to cancel), answers MCP servers' elicitation and sampling requests at the
// prompt, and runs `:`-commands through the command tree internal/cli hands
// it in Options. Only internal/cli imports it (Run).
package repl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chzyer/readline"

	"github.com/nerve-dev/nerve/internal/commander"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/client/mcpclient"
	"github.com/nerve-dev/nerve/pkg/node"
)

// replHelp is `:help` with no command: the grammar with examples.
const replHelp = `The Commander line:
  @NODE ?                      tools of NODE (for a single-tool node: its help)
  @NODE TOOL ?                 one tool: parameters, types, defaults, an example
  @NODE TOOL {JSON}            call with JSON arguments (may span lines)
  @NODE TOOL key=value ...     call with arguments coerced by the tool's schema
  @NODE TOOL VALUE             a tool with one required string parameter
  @NODE TEXT...                single-tool node: TEXT is its input (@bash ls -la)
  @NODE.TOOL ...               the qualified name works too
  :::N  :::NODE[-1]            the output of block N / NODE's last output
  :COMMAND ...                 a command of the command line (:node ls)

Keys: Tab completes, Ctrl-R searches history, Ctrl-C cancels a call (twice on
an empty line leaves), Ctrl-D leaves.

Commands (:help COMMAND for one):
`

// Options is what the Commander runs with. internal/cli fills it in: the
// connection, the files, and the command line's `:`-commands.
type Options struct {
	// Client is connected to the daemon (or an embedded one); Session names
	// the session the Commander is on.
	Client  *client.Client
	Session string

	Stdin          io.Reader // os.Stdin when nil
	Stdout, Stderr io.Writer
	// Color asks for ANSI colours.
	Color bool

	// HistoryFile keeps the lines typed, across Commanders.
	HistoryFile string
	// OutputDir receives the attachments of results and the whole text of
	// results cut for the screen.
	OutputDir string
	// SamplingNode is the llm node that may answer MCP servers' sampling
	// requests, after the person consents ("" for none).
	SamplingNode string

	// Commands are the `:`-commands: CommandSpecs for Tab, Summaries for
	// :help. Exec runs one (argv without the ':'), writing to stdout and
	// stderr; the error it returns is shown as is.
	CommandSpecs []commander.CommandSpec
	Summaries    []Summary
	Exec         func(ctx context.Context, argv []string, stdout, stderr io.Writer) error

	// Restart, if set, starts the daemon again after it went away under an
	// open Commander; it reports whether it had to start one. Nil where
	// there is no daemon to start (embedded, a client given).
	Restart func(ctx context.Context) (started bool, err error)
	// OnRevive, if set, is given the function to call when a request found
	// the daemon gone and started it again.
	OnRevive func(revived func())
	// OpenURL opens a page in the person's browser, when the person asks
	// the Commander to (a server's URL-mode elicitation); it says with
	// what ("" when there is no browser to open it with). Nil: none.
	OpenURL func(url string) (how string, err error)
}

// Summary is one line of :help's list of commands.
type Summary struct{ Name, Summary string }

// Run runs the Commander on opts' session until the person leaves.
func Run(ctx context.Context, opts *Options) error {
	// What the REPL does in the background (watching events, refreshing
	// its catalogue) never starts a daemon someone stopped; a line the
	// person runs does (run).
	ctx = client.WithRevive(ctx, false)
	r := &repl{
		opts:    opts,
		client:  opts.Client,
		session: opts.Client.Session(opts.Session),
		outDir:  opts.OutputDir,
		history: &commander.History{},
		kick:    make(chan struct{}, 1),
	}
	r.color = opts.Color
	r.style = commander.NewStyle(r.color)
	if opts.OnRevive != nil {
		// A line whose request found the daemon gone started it again.
		opts.OnRevive(func() {
			r.gone.Store(false)
			fmt.Fprintln(r.errOut, paint(r.style, r.style.Dim, daemonRestartedNotice))
		})
	}
	r.catalog = newCatalog(r.session)
	r.cmds = opts.CommandSpecs

	// Requests from servers are asked at the prompt too: the REPL's stdin
	// can end a pending Readline (asks.go).
	var stdin io.Reader = os.Stdin
	if opts.Stdin != nil {
		stdin = opts.Stdin
	}
	in := newWakeReader(stdin)
	defer in.Close()
	r.asks = newAsker(ctx, r)
	r.asks.wake = in.Wake

	if err := compactHistory(opts.HistoryFile, historyLimit); err != nil {
		fmt.Fprintf(opts.Stderr, "nerve: history: %v (continuing without it)\n", err)
	}
	rl, err := readline.NewEx(&readline.Config{
		Prompt:                 r.prompt(),
		HistoryFile:            opts.HistoryFile,
		HistoryLimit:           historyLimit,
		DisableAutoSaveHistory: true,
		HistorySearchFold:      true,
		AutoComplete:           &answerCompleter{k: r.asks, inner: &completer{r: r}},
		InterruptPrompt:        "^C",
		EOFPrompt:              "",
		Stdin:                  in,
		Stdout:                 opts.Stdout,
		Stderr:                 opts.Stderr,
	})
	if err != nil {
		return fmt.Errorf("starting the line editor: %w", err)
	}
	defer rl.Close()
	r.rl = rl
	r.out = rl.Stdout()
	r.errOut = rl.Stderr()

	r.catalog.refresh(ctx)
	// Attached before the first prompt, not only by the watcher once it
	// runs: a call held for approval right after the prompt shows is
	// asked here too.
	r.asks.sync(ctx)
	wctx, stopWatch := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { r.watch(wctx) })
	defer func() { stopWatch(); wg.Wait(); r.asks.close() }()

	fmt.Fprintf(r.out, "%s — session %s. %s\n",
		paint(r.style, r.style.Bold, "nerve"), r.session.Name(), paint(r.style, r.style.Dim, "Type :help for help, @NODE ? for a node's tools, Ctrl-D to leave."))
	return r.loop(ctx)
}

const historyLimit = 2000

// repl is one Commander session at a terminal.
type repl struct {
	opts    *Options
	client  *client.Client
	session *client.Session
	rl      *readline.Instance
	out     io.Writer
	errOut  io.Writer
	color   bool
	style   *commander.Style
	catalog *catalog
	cmds    []commander.CommandSpec
	history *commander.History
	outDir  string
	asks    *asker

	// gone: the daemon stopped answering (the watch saw its socket go
	// quiet); the next line starts it again. kick wakes the watch to
	// subscribe at once after that.
	gone atomic.Bool
	kick chan struct{}

	// mu guards busy: a call or command is running, so background notices
	// are held back until the prompt is shown again.
	mu      sync.Mutex
	busy    bool
	pending []string
}

func (r *repl) prompt() string {
	return paint(r.style, r.style.Cyan, r.session.Name()) + "> "
}

func (r *repl) loop(ctx context.Context) error {
	lastInterrupt := false
	var buf strings.Builder
	typed := "" // the line being typed when a request from a server came
	for {
		r.flushNotices()
		r.answerWaiting(ctx)
		if buf.Len() > 0 {
			r.rl.SetPrompt(strings.Repeat(" ", len(r.session.Name())) + paint(r.style, r.style.Dim, "…") + " ")
		} else {
			r.rl.SetPrompt(r.prompt())
		}
		r.asks.beginRead()
		line, err := r.rl.ReadlineWithDefault(typed)
		typed = ""
		if r.asks.endRead(errors.Is(err, readline.ErrInterrupt)) {
			typed = line
			continue
		}
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			if buf.Len() > 0 || strings.TrimSpace(line) != "" {
				buf.Reset()
				lastInterrupt = false
				continue
			}
			if lastInterrupt {
				return nil
			}
			lastInterrupt = true
			fmt.Fprintln(r.errOut, paint(r.style, r.style.Dim, "(press Ctrl-C again or Ctrl-D to leave)"))
			continue
		case errors.Is(err, io.EOF):
			if buf.Len() > 0 {
				buf.Reset()
				continue
			}
			return nil
		case err != nil:
			return fmt.Errorf("reading a line: %w", err)
		}
		lastInterrupt = false
		if buf.Len() > 0 {
			buf.WriteByte('\n')
		}
		buf.WriteString(line)
		text := buf.String()
		if commander.Incomplete(text) {
			continue
		}
		buf.Reset()
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		r.remember(text)
		if quit := r.run(ctx, text); quit {
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// remember saves a line in the history file once: a line equal to the
// previous one is not saved again, and a multi-line entry is kept as one
// line (JSON allows the newlines to be spaces).
func (r *repl) remember(text string) {
	entry := strings.Join(strings.Fields(strings.ReplaceAll(text, "\n", " ")), " ")
	if !strings.Contains(text, "\n") {
		entry = text
	}
	if last := r.lastHistory(); last == entry {
		return
	}
	if err := r.rl.SaveHistory(entry); err != nil {
		fmt.Fprintf(r.errOut, "nerve: saving history: %v\n", err)
	}
}

func (r *repl) lastHistory() string {
	return lastLine(r.opts.HistoryFile)
}

// run runs one complete input; it reports whether the person asked to leave.
func (r *repl) run(ctx context.Context, text string) (quit bool) {
	ctx = client.WithRevive(ctx, true)
	r.setBusy(true)
	defer r.setBusy(false)
	if r.gone.Load() {
		r.restartDaemon(ctx)
	}
	if id := commander.LineNode(text); id != "" {
		if tools, known := r.catalog.index().Tools(id); !known || tools == nil {
			// The catalog may be a moment behind another client, or the
			// node still starting.
			r.catalog.refresh(ctx)
			r.waitStarting(ctx, id)
			if tools, known := r.catalog.index().Tools(id); known && tools == nil {
				// A node the daemon restores after a restart is CREATED
				// until its start begins: ask for its tools, which waits
				// for that start, then read the catalog again (the line
				// was parsed against no tools: "not listed yet").
				r.awaitTools(ctx, id)
				if tools, _ := r.catalog.index().Tools(id); tools == nil && r.printNodeNotReady(ctx, id) {
					return false
				}
			}
		}
	}
	ln, err := commander.Parse(text, r.catalog.index(), r.history)
	if err != nil {
		r.printErr(err)
		return false
	}
	switch ln.Kind {
	case commander.Empty:
	case commander.Command:
		return r.command(ctx, ln.Argv)
	case commander.NodeHelp:
		tools, _ := r.catalog.index().Tools(ln.Node)
		if tools == nil {
			r.printNodeNotReady(ctx, ln.Node)
			return false
		}
		fmt.Fprint(r.out, commander.RenderToolList(ln.Node, tools, r.style))
		r.printNote(ln.Node)
	case commander.ToolHelp:
		tools, _ := r.catalog.index().Tools(ln.Node)
		t, _ := r.catalog.index().Tool(ln.Node, ln.Tool)
		fmt.Fprint(r.out, commander.RenderToolHelp(ln.Node, t, len(tools) == 1, r.style))
		r.printNote(ln.Node)
	case commander.Call:
		r.call(ctx, ln)
	case commander.Search:
		r.search(ctx, ln.Words) // search.go
	}
	return false
}

// restartDaemon starts the daemon again after it went away under an open
// Commander (someone ran `nerve daemon stop`, or it died), as any nerve
// command would: the daemon restores the session, and the REPL's client,
// which dials the socket per request, works again.
const daemonRestartedNotice = "· the daemon had stopped; started it again (nodes come back as they were)"

func (r *repl) restartDaemon(ctx context.Context) {
	if r.opts.Restart == nil {
		return
	}
	started, err := r.opts.Restart(ctx)
	if err != nil {
		r.printErr(fmt.Errorf("the daemon has stopped and starting it again failed: %w", err))
		return
	}
	r.gone.Store(false)
	select {
	case r.kick <- struct{}{}:
	default:
	}
	if started {
		fmt.Fprintln(r.errOut, paint(r.style, r.style.Dim, daemonRestartedNotice))
	}
	r.catalog.refresh(ctx)
}

// startWait is how long a line waits for its node to finish starting.
const startWait = 30 * time.Second

// waitStarting waits while node id is STARTING (a person who types a line
// right after nerve starts means it for the node about to be ready), until
// it is ready, fails, startWait passes or Ctrl-C.
func (r *repl) waitStarting(ctx context.Context, id string) {
	d, err := r.session.Node(ctx, id)
	if err != nil || d.Info.State.String() != "STARTING" {
		return
	}
	sigs, stop := interrupts()
	defer stop()
	st := &status{r: r, label: "@" + id + " is starting", start: time.Now()}
	defer st.clear()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for time.Since(st.start) < startWait {
		select {
		case <-ctx.Done():
			return
		case <-sigs:
			return
		case <-tick.C:
		}
		st.draw()
		if d, err = r.session.Node(ctx, id); err != nil || d.Info.State.String() != "STARTING" {
			r.catalog.refresh(ctx)
			return
		}
	}
}

// awaitTools asks the daemon for node id's tools, which waits for a start
// that is pending or under way (never starts a lazy node), for at most
// startWait or until Ctrl-C, and refreshes the catalog when they come.
func (r *repl) awaitTools(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	sigs, stop := interrupts()
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	defer func() { cancel(); <-done }()
	if tools, err := mcpclient.Tools(ctx, r.session, id); err == nil && len(tools) > 0 {
		r.catalog.refresh(ctx)
	}
}

// printNodeNotReady explains why a node has no tools to show; it reports
// whether it said anything (not for a node that is READY after all).
// printNote says, after a node's tools, what they are worth when it is
// not running (issue 27: a STOPPED node's tools looked callable).
func (r *repl) printNote(id string) {
	if n := r.catalog.note(id); n != "" {
		fmt.Fprintln(r.errOut, paint(r.style, r.style.Dim, commander.REPLSyntax(n)))
	}
}

func (r *repl) printNodeNotReady(ctx context.Context, id string) bool {
	d, err := r.session.Node(ctx, id)
	if err != nil {
		r.printErr(err)
		return true
	}
	switch d.Info.State {
	case node.Ready, node.Busy:
		return false
	case node.Starting:
		r.printErr(fmt.Errorf("@%s is still starting: its tools are not known yet (`:node info %s` says when it is ready)", id, id))
		return true
	}
	r.printErr(node.NotReady(id, d.Info.State, d.Info.Error))
	return true
}

func (r *repl) command(ctx context.Context, argv []string) (quit bool) {
	if len(argv) == 0 {
		r.printErr(errors.New("type a command after ':' — :help lists them"))
		return false
	}
	switch argv[0] {
	case "quit", "exit", "q":
		return true
	case "help", "h", "?":
		if len(argv) == 1 {
			fmt.Fprint(r.out, replHelp)
			for _, c := range r.opts.Summaries {
				fmt.Fprintf(r.out, "  :%-12s %s\n", c.Name, c.Summary)
			}
			fmt.Fprintf(r.out, "  :%-12s %s\n", "quit", "leave the Commander (the daemon keeps the nodes)")
			return false
		}
	}
	ctx = WithAsk(ctx, func(prompt string) (string, error) { return r.askLine(prompt, "") })
	if err := r.opts.Exec(ctx, argv, r.out, r.errOut); err != nil {
		r.printErr(err)
	}
	// A command may have added, removed or restarted nodes.
	r.catalog.refresh(ctx)
	return false
}

func (r *repl) printErr(err error) {
	fmt.Fprintln(r.errOut, paint(r.style, r.style.Bold+r.style.Red, "error: ")+commander.REPLSyntax(err.Error()))
}

// setBusy marks a call or command running; notices wait until it ends.
func (r *repl) setBusy(b bool) {
	r.mu.Lock()
	r.busy = b
	r.mu.Unlock()
}

// notice shows a background event: at once while the person is typing
// (readline redraws the line being typed), after the call otherwise.
func (r *repl) notice(msg string) {
	r.mu.Lock()
	if r.busy {
		r.pending = append(r.pending, msg)
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	fmt.Fprintln(r.out, msg)
}

func (r *repl) flushNotices() {
	r.mu.Lock()
	pending := r.pending
	r.pending = nil
	r.mu.Unlock()
	for _, m := range pending {
		fmt.Fprintln(r.out, m)
	}
}

// watch follows the session's events: it keeps the completion catalog
// fresh and reports nodes that change state in the background.
func (r *repl) watch(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		w, err := r.session.Subscribe(ctx)
		if err != nil {
			if errors.Is(err, client.ErrDaemonUnavailable) {
				r.gone.Store(true)
			}
			select {
			case <-ctx.Done():
				return
			case <-r.kick:
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		r.catalog.refresh(ctx)
		r.asks.sync(ctx)
		for {
			ev, err := w.Next(ctx)
			if err != nil {
				break
			}
			switch ev.Kind {
			case "state":
				r.catalog.invalidate()
				if msg := stateNotice(r.style, ev.Node, ev.From, ev.To, ev.Reason); msg != "" {
					r.notice(msg)
				}
			case "tools", "node_added", "node_removed":
				r.catalog.invalidate()
			}
			if ev.Kind == "node_added" || ev.Kind == "node_removed" || ev.Kind == "state" && ev.To == "READY" {
				r.asks.sync(ctx)
			}
		}
		w.Close()
	}
}

// stateNotice is the line shown for a state change, or "" for the routine
// ones (READY ⇄ BUSY, a start or stop someone asked for).
func stateNotice(st *commander.Style, node, from, to, reason string) string {
	switch {
	case to == "ERROR":
		msg := fmt.Sprintf("! @%s is ERROR", node)
		if reason != "" {
			msg += ": " + reason
		}
		hint := fmt.Sprintf("  (`:node restart %s`)", node)
		if strings.Contains(reason, "nerve node auth "+node) {
			// The server wants a sign-in: offer it (internal/cli/node_auth.go).
			hint = fmt.Sprintf("  (sign in: `:node auth %s`)", node)
		}
		return paint(st, st.Bold+st.Red, msg) + paint(st, st.Dim, hint)
	case to == "READY" && from == "STARTING":
		return paint(st, st.Dim, fmt.Sprintf("· @%s is READY", node))
	}
	return ""
}

// interrupts delivers Ctrl-C (SIGINT) while a call runs: the terminal is
// out of raw mode then, so Ctrl-C arrives as a signal, not a key.
func interrupts() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt)
	return ch, func() { signal.Stop(ch) }
}

// paint wraps text in an ANSI sequence of st (empty when colour is off).
func paint(st *commander.Style, seq, text string) string {
	if st == nil || seq == "" || st.Reset == "" {
		return text
	}
	return seq + text + st.Reset
}
