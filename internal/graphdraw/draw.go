// Package graphdraw draws a graph definition: its steps by depth, each with
// what it calls and what it waits for, as text for a terminal, as Graphviz
// dot or as a Mermaid flowchart (`nerve graph show`). It reads only the
// language (internal/graphlang), never the runtime.
package graphdraw

import (
	"fmt"
	"io"
	"strings"

	"github.com/nerve-dev/nerve/internal/graphlang"
)

// stepLevels gives each step its depth in the DAG: 0 for a step that waits
// for none, else one more than the deepest step it waits for.
func stepLevels(d *graphlang.Def) map[string]int {
	level := map[string]int{}
	var depth func(s *graphlang.Step, seen map[string]bool) int
	depth = func(s *graphlang.Step, seen map[string]bool) int {
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

// maxIndent is the deepest level Text indents: deeper levels are drawn at
// it.
const maxIndent = 8

// Text draws d's steps by level, each with what it calls and what it
// waits for; states, if given, adds each step's state and time from a run.
func Text(w io.Writer, name string, d *graphlang.Def, states map[string]string) {
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
	if maxL > maxIndent {
		// A long chain indented a level more per step: a 1,000-step chain
		// drew lines of 3,000 characters (issue 27).
		fmt.Fprintf(w, "(%d levels: those past %d are drawn at %d; each step names the steps it waits for)\n", maxL+1, maxIndent, maxIndent)
	}
	for l := 0; l <= maxL; l++ {
		var row []*graphlang.Step
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
			line := fmt.Sprintf("%s%s %-*s  %s", strings.Repeat("   ", min(l, maxIndent)), branch, width, s.ID, what(s))
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

// what is what a step does, in a word: its call, "script" or "ask".
func what(s *graphlang.Step) string {
	switch {
	case s.Call != "":
		return s.Call
	case s.Script != "":
		return "script"
	}
	return "ask"
}

// Dot is d as Graphviz dot.
func Dot(name string, d *graphlang.Def) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %q {\n  rankdir=LR;\n", name)
	for _, s := range d.Steps {
		label := s.ID + "\\n" + what(s)
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

// Mermaid is d as a Mermaid flowchart.
func Mermaid(d *graphlang.Def) string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	for _, s := range d.Steps {
		fmt.Fprintf(&b, "  %s[\"%s<br/>%s\"]\n", s.ID, s.ID, what(s))
	}
	for _, s := range d.Steps {
		for _, dep := range s.Deps {
			fmt.Fprintf(&b, "  %s --> %s\n", dep, s.ID)
		}
	}
	return b.String()
}
