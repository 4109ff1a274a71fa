package repl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/chzyer/readline"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/commander"
	"github.com/nerve-dev/nerve/pkg/client/mcpclient"
)

// humanModel is the model name of an answer the person typed.
const humanModel = "human (typed in nerve's Commander)"

// renderSampling shows a sampling request: who asks, the system prompt,
// the messages, the limits and preferences, and the choices.
func renderSampling(st *commander.Style, node string, p *mcp.CreateMessageParams, samplingNode string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", paint(st, st.Bold+st.Yellow, fmt.Sprintf("? @%s asks for a model's answer (sampling)", node)))
	if p.SystemPrompt != "" {
		fmt.Fprintf(&b, "  %s %s\n", paint(st, st.Dim, "system:"), indentRest(p.SystemPrompt, "    "))
	}
	for _, m := range p.Messages {
		if m == nil {
			continue
		}
		fmt.Fprintf(&b, "  %s %s\n", paint(st, st.Dim, string(m.Role)+":"), indentRest(describeContent(m.Content), "    "))
	}
	var limits []string
	if p.MaxTokens > 0 {
		limits = append(limits, fmt.Sprintf("max tokens %d", p.MaxTokens))
	}
	if p.Temperature != 0 {
		limits = append(limits, fmt.Sprintf("temperature %g", p.Temperature))
	}
	if len(p.StopSequences) > 0 {
		limits = append(limits, fmt.Sprintf("stop at %q", p.StopSequences))
	}
	if p.IncludeContext != "" && p.IncludeContext != "none" {
		limits = append(limits, "include context: "+p.IncludeContext)
	}
	if mp := p.ModelPreferences; mp != nil {
		var prefs []string
		for _, h := range mp.Hints {
			if h != nil && h.Name != "" {
				prefs = append(prefs, "model like "+h.Name)
			}
		}
		for _, pr := range []struct {
			name string
			v    float64
		}{{"cost", mp.CostPriority}, {"speed", mp.SpeedPriority}, {"intelligence", mp.IntelligencePriority}} {
			if pr.v != 0 {
				prefs = append(prefs, fmt.Sprintf("%s %g", pr.name, pr.v))
			}
		}
		if len(prefs) > 0 {
			limits = append(limits, "prefers "+strings.Join(prefs, ", "))
		}
	}
	if len(limits) > 0 {
		fmt.Fprintf(&b, "  %s\n", paint(st, st.Dim, strings.Join(limits, " · ")))
	}
	b.WriteString("  " + samplingChoices(samplingNode) + "\n")
	return b.String()
}

func samplingChoices(samplingNode string) string {
	var c []string
	if samplingNode != "" {
		c = append(c, "[a] answer with @"+samplingNode)
	}
	return strings.Join(append(c, "[t] type the answer", "[d] decline"), "  ")
}

// describeContent is a content block as one readable piece: text as is,
// anything else described.
func describeContent(c mcp.Content) string {
	switch v := c.(type) {
	case nil:
		return "(nothing)"
	case *mcp.TextContent:
		return v.Text
	case *mcp.ImageContent:
		return fmt.Sprintf("[image %s, %s]", v.MIMEType, byteSize(len(v.Data)))
	case *mcp.AudioContent:
		return fmt.Sprintf("[audio %s, %s]", v.MIMEType, byteSize(len(v.Data)))
	case *mcp.ResourceLink:
		return fmt.Sprintf("[resource link %s]", v.URI)
	case *mcp.EmbeddedResource:
		if v.Resource != nil {
			if v.Resource.Text != "" {
				return fmt.Sprintf("[resource %s]\n%s", v.Resource.URI, v.Resource.Text)
			}
			return fmt.Sprintf("[resource %s, %s]", v.Resource.URI, byteSize(len(v.Resource.Blob)))
		}
	}
	return fmt.Sprintf("[%T content]", c)
}

func byteSize(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}

// indentRest indents every line of s but the first.
func indentRest(s, indent string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+indent)
}

// errDeclined is the person declining (d, Ctrl-C) in a dialog; errCancel
// is Ctrl-D, which for elicitation means "not now".
var (
	errDeclined = errors.New("declined")
	errCancel   = errors.New("cancelled")
)

// askLine reads one line of a dialog with prompt, pre-filled with def.
// Ctrl-C is errDeclined, Ctrl-D errCancel; a request the server withdrew
// ends the Readline (with a Ctrl-C of the asker's) and is its *withdrawal.
func (r *repl) askLine(prompt, def string) (string, error) {
	r.rl.SetPrompt(prompt)
	defer r.rl.SetPrompt(r.prompt())
	q := r.currentAsk()
	var line string
	var err error
	for {
		if r.asks != nil && !r.asks.beginAskRead(q) {
			return "", q.withdrawn()
		}
		line, err = r.rl.ReadlineWithDefault(def)
		wakeUp := r.asks != nil && r.asks.endRead(errors.Is(err, readline.ErrInterrupt))
		if q != nil && q.withdrawn() != nil {
			return "", q.withdrawn()
		}
		if !wakeUp {
			break
		}
		def = line // a wake-up meant for the prompt: ask again, keeping what was typed
	}
	switch {
	case errors.Is(err, readline.ErrInterrupt):
		return "", errDeclined
	case errors.Is(err, io.EOF):
		return "", errCancel
	case err != nil:
		return "", fmt.Errorf("reading your answer: %w", err)
	}
	return line, nil
}

// askText reads lines until an empty one; a line is pre-filled with def's
// first line when def is one line.
func (r *repl) askText(prompt, def string) (string, error) {
	fmt.Fprintln(r.out, paint(r.style, r.style.Dim, "  (an empty line ends the text, Ctrl-C declines)"))
	var lines []string
	first := def
	if strings.Contains(def, "\n") {
		first = ""
	}
	for {
		p := prompt
		if len(lines) > 0 {
			p = strings.Repeat(" ", len(prompt)-2) + "… "
		}
		line, err := r.askLine(p, first)
		first = ""
		if err != nil {
			return "", err
		}
		if line == "" {
			return strings.Join(lines, "\n"), nil
		}
		lines = append(lines, line)
	}
}

// choose asks for one of the letters in keys; Enter picks def when set.
func (r *repl) choose(prompt, keys, def string) (string, error) {
	for {
		line, err := r.askLine(prompt, "")
		if err != nil {
			return "", err
		}
		line = strings.ToLower(strings.TrimSpace(line))
		if line == "" {
			line = def
		}
		if len(line) >= 1 && strings.Contains(keys, line[:1]) && line != "" {
			return line[:1], nil
		}
		fmt.Fprintf(r.errOut, "  type one of %s\n", strings.Join(strings.Split(keys, ""), ", "))
	}
}

// answerSample runs the sampling dialog: answer with the sampling node
// (then send, edit or decline its answer), type the answer, or decline.
func (r *repl) answerSample(_ context.Context, q *ask) askAnswer {
	var p mcp.CreateMessageParams
	if err := json.Unmarshal(q.params, &p); err != nil {
		r.printErr(fmt.Errorf("@%s sent a sampling request nerve cannot read: %w (declined)", q.node, err))
		return declined(q.kind, "unreadable request")
	}
	samplingNode := r.opts.SamplingNode
	fmt.Fprint(r.out, renderSampling(r.style, q.node, &p, samplingNode))
	keys := "td"
	if samplingNode != "" {
		keys = "atd"
	}
	for {
		c, err := r.choose("sampling> ", keys, "")
		if err != nil {
			return r.declinedSample(q)
		}
		var res *mcp.CreateMessageResult
		switch c {
		case "d":
			return r.declinedSample(q)
		case "t":
			text, err := r.askText("answer> ", "")
			if err != nil {
				return r.declinedSample(q)
			}
			res = &mcp.CreateMessageResult{Role: "assistant", Model: humanModel, Content: &mcp.TextContent{Text: text}, StopReason: "endTurn"}
		case "a":
			res, err = r.sampleWith(q.ctx, samplingNode, &p)
			if errors.Is(err, errDeclined) || q.withdrawn() != nil {
				return r.declinedSample(q)
			}
			if err != nil {
				r.printErr(err)
				fmt.Fprintln(r.out, "  "+samplingChoices(samplingNode))
				continue
			}
			if res, err = r.reviewSample(samplingNode, res); err != nil {
				return r.declinedSample(q)
			}
		}
		fmt.Fprintln(r.out, paint(r.style, r.style.Dim, fmt.Sprintf("  → sent to @%s", q.node)))
		return askAnswer{result: res}
	}
}

func (r *repl) declinedSample(q *ask) askAnswer {
	if q.withdrawn() != nil {
		return declined(q.kind, "withdrawn") // answerAsk says why; nothing is sent
	}
	fmt.Fprintln(r.out, paint(r.style, r.style.Dim, fmt.Sprintf("  → declined; @%s is told so", q.node)))
	return declined(q.kind, "they said no in the Commander")
}

// sampleWith has node answer p, showing that it waits; Ctrl-C stops the
// wait and is errDeclined.
func (r *repl) sampleWith(ctx context.Context, node string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type outcome struct {
		res *mcp.CreateMessageResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := mcpclient.Sample(sctx, r.session, node, p)
		done <- outcome{res, err}
	}()
	fmt.Fprintln(r.out, paint(r.style, r.style.Dim, fmt.Sprintf("  asking @%s… (Ctrl-C declines)", node)))
	sigs, stop := interrupts()
	defer stop()
	select {
	case o := <-done:
		return o.res, o.err
	case <-sigs:
		cancel()
		<-done
		return nil, errDeclined
	}
}

// reviewSample shows the model's answer and asks whether to send it as
// is, edit it, or decline.
func (r *repl) reviewSample(node string, res *mcp.CreateMessageResult) (*mcp.CreateMessageResult, error) {
	for {
		fmt.Fprintf(r.out, "  %s\n  %s\n  [s]end  [e]dit  [d]ecline\n",
			paint(r.style, r.style.Dim, fmt.Sprintf("@%s (%s) answers:", node, res.Model)),
			indentRest(describeContent(res.Content), "  "))
		c, err := r.choose("sampling> ", "sed", "")
		if err != nil {
			return nil, err
		}
		switch c {
		case "d":
			return nil, errDeclined
		case "s":
			return res, nil
		case "e":
			old := ""
			if t, ok := res.Content.(*mcp.TextContent); ok {
				old = t.Text
			}
			text, err := r.askText("answer> ", old)
			if err != nil {
				return nil, err
			}
			edited := *res
			edited.Content = &mcp.TextContent{Text: text}
			edited.Model = res.Model + ", edited by a person"
			res = &edited
		}
	}
}
