package session

import (
	"fmt"
	"strings"

	"github.com/nerve-dev/nerve/pkg/node"
)

// NotFoundError reports an unknown node id; it matches node.ErrNotFound.
type NotFoundError struct {
	Node  string
	Known []string
}

func (e *NotFoundError) Error() string {
	if len(e.Known) == 0 {
		return fmt.Sprintf("no node %q: the session has no nodes (add one with `:node add KIND NAME`)", e.Node)
	}
	if m := closest(e.Node, e.Known); m != "" {
		return fmt.Sprintf("no node %q: did you mean %q? (nodes: %s)", e.Node, m, strings.Join(e.Known, ", "))
	}
	return fmt.Sprintf("no node %q (nodes: %s)", e.Node, strings.Join(e.Known, ", "))
}

func (e *NotFoundError) Unwrap() error { return node.ErrNotFound }

// UnknownToolError reports a tool a node does not have; it matches
// node.ErrUnknownTool.
type UnknownToolError struct {
	Node, Tool string
	Known      []string
}

func (e *UnknownToolError) Error() string {
	hint := fmt.Sprintf("`@%s ?` lists its tools", e.Node)
	if m := closest(e.Tool, e.Known); m != "" {
		return fmt.Sprintf("node %q has no tool %q: did you mean %q? (%s)", e.Node, e.Tool, m, hint)
	}
	return fmt.Sprintf("node %q has no tool %q (%s)", e.Node, e.Tool, hint)
}

func (e *UnknownToolError) Unwrap() error { return node.ErrUnknownTool }

// closest returns the candidate nearest to s by edit distance, if it is
// near enough to be a plausible typo.
func closest(s string, candidates []string) string {
	best, bestD := "", len(s)/2+2
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
