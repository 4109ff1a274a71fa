package session

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nerve-dev/nerve/internal/suggest"
	"github.com/nerve-dev/nerve/pkg/node"
)

// NotFoundError reports an unknown node id; it matches node.ErrNotFound.
type NotFoundError struct {
	Node  string
	Known []string
}

func (e *NotFoundError) Error() string {
	if len(e.Known) == 0 {
		return fmt.Sprintf("no node %q: the session has no nodes (add one with `nerve node add KIND NAME`)", e.Node)
	}
	if m := suggest.Closest(e.Node, e.Known); m != "" {
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
	hint := fmt.Sprintf("`nerve call @%s ?` lists its tools", e.Node)
	if m := suggest.Closest(e.Tool, e.Known); m != "" {
		return fmt.Sprintf("node %q has no tool %q: did you mean %q? (%s)", e.Node, e.Tool, m, hint)
	}
	return fmt.Sprintf("node %q has no tool %q (%s)", e.Node, e.Tool, hint)
}

func (e *UnknownToolError) Unwrap() error { return node.ErrUnknownTool }

// ErrUnsupported: the node's kind cannot do what was asked.
var ErrUnsupported = errors.New("not supported by this kind of node")
