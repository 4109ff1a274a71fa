package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nerve-dev/nerve/internal/nodes/graph"
)

// stepLevels gives each step its depth in the DAG: 0 for a step that waits
// for none, else one more than the deepest step it waits for.
func stepLevels(d *graph.Def) map[string]int {
	level := map[string]int{}
	var depth func(s *graph.Step, seen map[string]bool) int
	depth = func(s *graph.Step, seen map[string]bool) int {
		if l, ok := level[s.ID]; ok {
			return l
		}
		if seen[s.ID] {
			return 0 // a cycle: Parse refuses those, so never reached
		}
		seen[s.ID] = true
		l := 0
		for _, dep := range s.Deps {
			if ds := d.Step(dep); ds != nil {
				l = max(l, depth(ds, seen)+1)
			}
		}
		level[s.ID] = l
		return l
	}
	for _, s := range d.Steps {
		depth(s, map[string]bool{})
	}
	return level
}

// drawGraph draws d's steps by level, each with what it calls and what it
// waits for; states, if given, adds each step's state and time from a run.
func drawGraph(w io.Writer, name string, d *graph.Def, states map[string]string) {
	level := stepLevels(d)
	maxL := 0
	for _, l := range level {
		maxL = max(maxL, l)
	}
	width := 0
	for _, s := range d.Steps {
		width = max(width, len(s.ID))
	}
	fmt.Fprintf(w, "graph %s: %d steps\n", name, len(d.Steps))
	for l := 0; l <= maxL; l++ {
		var row []*graph.Step
		for _, s := range d.Steps {
			if level[s.ID] == l {
				row = append(row, s)
			}
		}
		for i, s := range row {
			branch := "├─"
			if i == len(row)-1 {
				branch = "└─"
			}
			if len(row) == 1 {
				branch = "──"
			}
			what := s.Call
			if s.Call == "" {
				what = "ask"
			}
			line := fmt.Sprintf("%s%s %-*s  %s", strings.Repeat("   ", l), branch, width, s.ID, what)
			if len(s.Deps) > 0 {
				line += "  ← " + strings.Join(s.Deps, ", ")
			}
			if st, ok := states[s.ID]; ok {
				line += "  [" + st + "]"
			}
			fmt.Fprintln(w, line)
		}
	}
}

// graphDot is d as Graphviz dot.
func graphDot(name string, d *graph.Def) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %q {\n  rankdir=LR;\n", name)
	for _, s := range d.Steps {
		label := s.ID + "\\n" + s.Call
		if s.Call == "" {
			label = s.ID + "\\nask"
		}
		fmt.Fprintf(&b, "  %q [label=\"%s\"];\n", s.ID, strings.ReplaceAll(label, `"`, `\"`))
	}
	for _, s := range d.Steps {
		for _, dep := range s.Deps {
			fmt.Fprintf(&b, "  %q -> %q;\n", dep, s.ID)
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// graphMermaid is d as a Mermaid flowchart.
func graphMermaid(d *graph.Def) string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	for _, s := range d.Steps {
		what := s.Call
		if what == "" {
			what = "ask"
		}
		fmt.Fprintf(&b, "  %s[\"%s<br/>%s\"]\n", s.ID, s.ID, what)
	}
	for _, s := range d.Steps {
		for _, dep := range s.Deps {
			fmt.Fprintf(&b, "  %s --> %s\n", dep, s.ID)
		}
	}
	return b.String()
}

// runStates is each step's "state time" in a run.
func runStates(r *runSummary) map[string]string {
	out := map[string]string{}
	for _, st := range r.Steps {
		id, _ := st["id"].(string)
		state, _ := st["state"].(string)
		ms, _ := st["ms"].(float64)
		if ms > 0 {
			state += " " + roundDuration(time.Duration(ms*float64(time.Millisecond)))
		}
		out[id] = state
	}
	return out
}
