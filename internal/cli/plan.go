package cli

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/graphdraw"
	"github.com/nerve-dev/nerve/internal/planner"
	"github.com/nerve-dev/nerve/internal/repl"
	"github.com/nerve-dev/nerve/pkg/api"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/client/mcpclient"
	"github.com/nerve-dev/nerve/pkg/node"
)

func planCmd() *Command {
	return &Command{
		Name:    "plan",
		Summary: "have an llm node draft a graph or a script from a sentence; saved as a graph on your yes",
		Usage:   "plan [--llm NODE] [--name NAME] [--yes] [--attempts N] SENTENCE...",
		Help: `An llm node drafts a graph (YAML) or a code-mode script (Starlark) for
SENTENCE from the session's tools: nerve finds the tools that fit it with
the session's search index (as search_tools does) and shows the model
their signatures. Each draft is checked as ` + "`nerve graph add`" + ` checks
a graph (a script becomes a graph of one script step); a draft with
mistakes goes back to the model with them, --attempts times at most
(default 3). The draft that passes is shown with its picture and saved
as graph NAME when you say yes (--yes: without asking; without a
terminal to ask on, it is not saved unless --yes).

The llm node is --llm NODE, or the session's only llm node. Its model is
asked directly: its conversation is not changed.

Examples:
  nerve plan create a github issue for every failing test
  nerve plan --llm gpt --name notes-summary 'summarise the notes in /notes and remember the summary'
  nerve plan --yes count the words of every file in /tmp/notes`,
		Flags: []*Flag{
			{Name: "llm", Value: "NODE", Usage: "the llm node that drafts (default: the session's only llm node)"},
			{Name: "name", Value: "NAME", Usage: "the graph's name (default: the model's suggestion)"},
			{Name: "yes", Short: "y", Usage: "save the draft that passes without asking"},
			{Name: "attempts", Value: "N", Usage: fmt.Sprintf("drafts at most (default %d)", planner.DefaultAttempts)},
		},
		Run: runPlan,
	}
}

// errNotSaved is a plan that passed but was not saved.
var errNotSaved = errors.New("not saved")

func runPlan(ctx context.Context, env *Env, inv *Invocation) error {
	sentence := strings.TrimSpace(strings.Join(inv.Args, " "))
	if sentence == "" {
		return usagef(inv, "say what the plan should do, e.g. `nerve plan summarise the notes in /notes`")
	}
	attempts := 0
	if a := inv.Flag("attempts"); a != "" {
		n, err := strconv.Atoi(a)
		if err != nil || n < 1 || n > 10 {
			return usagef(inv, "--attempts %q: give a number from 1 to 10", a)
		}
		attempts = n
	}
	name := inv.Flag("name")
	if name != "" {
		if err := node.ValidateID(name); err != nil {
			return usagef(inv, "--name: %v", err)
		}
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	infos, err := s.Nodes(ctx)
	if err != nil {
		return err
	}
	taken := map[string]bool{}
	for _, in := range infos {
		taken[in.ID] = true
	}
	if taken[name] {
		return usagef(inv, "node %q exists: pick another --name, or remove it first (`nerve graph rm %s`)", name, name)
	}
	llmID, err := planningNode(infos, inv.Flag("llm"))
	if err != nil {
		return err
	}
	entries, err := mcpclient.Toolset(ctx, s)
	if err != nil {
		return err
	}
	ts := toolsetOf(entries)
	fmt.Fprintf(env.Stderr, "asking @%s for a plan, with the %d tools of the session…\n", llmID, ts.Len())
	d, err := planner.Plan(ctx, sentence, &planner.Options{
		Tools:    ts,
		Attempts: attempts,
		Search: func(ctx context.Context, words string, limit int) ([]string, error) {
			found, err := s.SearchTools(ctx, words, limit)
			if err != nil {
				return nil, err
			}
			names := make([]string, len(found.Tools))
			for i, t := range found.Tools {
				names[i] = t.Qualified
			}
			return names, nil
		},
		Ask: func(ctx context.Context, system string, msgs []planner.Message) (string, error) {
			p := &mcp.CreateMessageParams{SystemPrompt: system}
			for _, m := range msgs {
				p.Messages = append(p.Messages, &mcp.SamplingMessage{Role: mcp.Role(m.Role), Content: &mcp.TextContent{Text: m.Text}})
			}
			res, err := mcpclient.Sample(ctx, s, llmID, p)
			if err != nil {
				return "", err
			}
			if tc, ok := res.Content.(*mcp.TextContent); ok {
				return tc.Text, nil
			}
			return "", fmt.Errorf("@%s answered with %T, not text", llmID, res.Content)
		},
		Check: func(ctx context.Context, d *planner.Draft) ([]string, error) {
			if name != "" {
				d.Name = name
			}
			d.Name = freeName(d.Name, taken)
			return checkDraft(ctx, s, d)
		},
		Observe: func(n int, d *planner.Draft, err error) {
			var m *planner.Mistakes
			if errors.As(err, &m) {
				what := "the answer"
				if d != nil {
					what = d.Kind + " " + d.Name
				}
				again := ""
				if n < cmp.Or(attempts, planner.DefaultAttempts) {
					again = "; asking again"
				}
				fmt.Fprintf(env.Stderr, "draft %d (%s) has %d mistake(s)%s\n", n, what, len(m.List), again)
			}
		},
	})
	var failed *planner.Failed
	if errors.As(err, &failed) {
		if failed.Draft != nil {
			fmt.Fprintf(env.Stdout, "%s\n", strings.TrimRight(failed.Draft.Source, "\n"))
		}
		return fmt.Errorf("%w\nsay it another way, or fix the draft above and add it with `nerve graph add NAME --from FILE`", err)
	}
	if err != nil {
		return err
	}
	return showAndSave(ctx, env, inv, s, d)
}

// planningNode is the llm node that drafts: want, or the session's only
// llm node.
func planningNode(infos []api.Info, want string) (string, error) {
	var llms []string
	for _, in := range infos {
		if in.ID == want && in.Kind != "llm" {
			return "", fmt.Errorf("node %q is a %s node: `nerve plan --llm` needs an llm node (`nerve node ls` lists the nodes)", want, in.Kind)
		}
		if in.Kind == "llm" {
			llms = append(llms, in.ID)
		}
	}
	switch {
	case want != "":
		for _, id := range llms {
			if id == want {
				return want, nil
			}
		}
		return "", fmt.Errorf("no node %q in this session: `nerve plan --llm NODE` names an llm node (`nerve node ls` lists the nodes)", want)
	case len(llms) == 1:
		return llms[0], nil
	case len(llms) == 0:
		return "", errors.New("nerve plan needs an llm node to draft with, and the session has none: add one, e.g. `nerve node add llm planner --base-url https://api.openai.com/v1 --model gpt-4o-mini --api-key '${OPENAI_API_KEY}'`, then run `nerve plan` again")
	}
	return "", fmt.Errorf("the session has %d llm nodes (%s): choose the one that drafts with --llm NODE", len(llms), strings.Join(llms, ", "))
}

// toolsetOf is the session's toolset as the daemon listed it.
func toolsetOf(entries []mcpclient.ToolEntry) *node.Toolset {
	return node.ToolsetOf(func(yield func(string, *mcp.Tool) bool) {
		for _, e := range entries {
			if e.MCPTool != nil && !yield(e.Node, e.MCPTool) {
				return
			}
		}
	})
}

// freeName is name, or name-2, name-3, … when a node has it.
func freeName(name string, taken map[string]bool) string {
	if !taken[name] {
		return name
	}
	for i := 2; ; i++ {
		if n := fmt.Sprintf("%s-%d", name, i); !taken[n] {
			return n
		}
	}
}

// checkDraft has the daemon check d's graph as it checks any graph it
// adds (POST …/nodes?dry_run=1); its mistakes are the planner's, one a
// line, at LINE:COLUMN of the graph.
func checkDraft(ctx context.Context, s *client.Session, d *planner.Draft) ([]string, error) {
	warnings, err := s.CheckNode(ctx, draftSpec(d))
	if err == nil || !errors.Is(err, client.ErrBadRequest) {
		return warnings, err
	}
	var list []string
	for i, l := range strings.Split(apiMessage(err), "\n") {
		if l = strings.TrimSpace(l); l != "" && !(i == 0 && strings.HasSuffix(l, "has mistakes:")) {
			list = append(list, l)
		}
	}
	return nil, &planner.Mistakes{List: list}
}

// apiMessage is the daemon's message of a refusal.
func apiMessage(err error) string {
	var ce *client.Error
	if errors.As(err, &ce) {
		return ce.Message
	}
	return err.Error()
}

func draftSpec(d *planner.Draft) api.Spec { return graphSpec(d.Name, d.Graph) }

// showAndSave shows the draft that passed — its source, its picture, the
// checks' warnings — and saves it as a graph on the person's yes.
func showAndSave(ctx context.Context, env *Env, inv *Invocation, s *client.Session, d *planner.Draft) error {
	yes := inv.Bool("yes")
	if env.JSON {
		out := map[string]any{"name": d.Name, "kind": d.Kind, "source": d.Source, "graph": d.Graph, "saved": false}
		if len(d.Warnings) > 0 {
			out["warnings"] = d.Warnings
		}
		if yes {
			if _, err := s.AddNode(ctx, draftSpec(d)); err != nil {
				return err
			}
			out["saved"] = true
		}
		return printJSON(env, out)
	}
	fmt.Fprintf(env.Stdout, "%s %s:\n\n%s\n\n", d.Kind, d.Name, strings.TrimRight(d.Source, "\n"))
	if d.Def != nil {
		graphdraw.Text(env.Stdout, d.Name, d.Def, nil)
	}
	for _, w := range d.Warnings {
		fmt.Fprintf(env.Stderr, "nerve: warning: %s\n", w)
	}
	if !yes {
		ok, err := confirm(ctx, env, fmt.Sprintf("save it as graph %s? [y/N] ", d.Name))
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintf(env.Stderr, "not saved\n")
			return nil
		}
	}
	if _, err := s.AddNode(ctx, draftSpec(d)); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "graph %s added; run it with `nerve call @%s` (`nerve call @%s ?` shows its inputs)\n", d.Name, d.Name, d.Name)
	return nil
}

// confirm asks the person a yes/no question: in the Commander on its
// prompt line, else on the terminal. With neither, nothing is saved.
func confirm(ctx context.Context, env *Env, question string) (bool, error) {
	var line string
	switch ask := repl.Asker(ctx); {
	case ask != nil:
		l, err := ask(question)
		if err != nil {
			return false, nil // Ctrl-C, Ctrl-D: no
		}
		line = l
	case isTerminal(env.Stdin):
		fmt.Fprint(env.Stderr, question)
		l, err := bufio.NewReader(env.Stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return false, fmt.Errorf("reading your answer: %w", err)
		}
		line = l
	default:
		return false, fmt.Errorf("%w: there is no terminal to ask on; run it again with --yes to save the draft, or save the source above with `nerve graph add NAME --from FILE`", errNotSaved)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
