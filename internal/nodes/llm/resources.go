package llm

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/pkg/node"
)

// An llm node may be given resources of the session's nodes (option
// resources, --resource NODE:URI): their text goes into the model's
// context. They are read at the start of every chat call (turn), so the
// model sees each as it is now, and put in the system prompt of that
// turn's requests, never in the saved conversation, where each turn
// would add another copy (issue 27).

// MaxResourceBytes bounds the text of an llm node's resources, all of them
// together: they are sent with every request of a turn.
const MaxResourceBytes = 128 << 10

// resourceRef is one entry of option resources: a node and a URI.
type resourceRef struct{ node, uri string }

func (r resourceRef) String() string { return r.node + ":" + r.uri }

// parseResources reads option resources ("NODE:URI" each); self is the
// llm node's id, which has no resources to give.
func parseResources(list []string, self string) ([]resourceRef, error) {
	var out []resourceRef
	for _, s := range list {
		id, uri, ok := strings.Cut(s, ":")
		switch {
		case !ok || id == "" || !strings.Contains(uri, ":"):
			return nil, fmt.Errorf("resource %q: write NODE:URI, e.g. fs:file:///home/ada/README.md (`nerve resources NODE` lists a node's)", s)
		case id == self:
			return nil, fmt.Errorf("resource %q: node %s is this llm node, which has no resources; name the node that serves it", s, id)
		}
		out = append(out, resourceRef{node: id, uri: uri})
	}
	return out, nil
}

// readyNodes is the session seen by a node that reads another's
// resources (pkg/session.Session.Ready: waits for a start, starts a lazy
// node).
type readyNodes interface {
	Ready(ctx context.Context, id string) (node.Node, error)
}

// resourceReader is a node that serves resources (an mcp node).
type resourceReader interface {
	ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error)
}

// turnSystem is the system prompt of this turn's requests: the node's
// own, then the text of each of its resources, read now. An error names
// the resource and what to do; the turn is not taken.
func (n *Node) turnSystem(ctx context.Context) (string, error) {
	if len(n.resources) == 0 {
		return n.opts.System, nil
	}
	rd, ok := n.env.Tools.(readyNodes)
	if !ok {
		return "", fmt.Errorf("node %q has resources, but its session cannot read them", n.ID())
	}
	var b strings.Builder
	if n.opts.System != "" {
		b.WriteString(n.opts.System)
		b.WriteString("\n\n")
	}
	b.WriteString("Resources given to you, read at the start of this turn:\n")
	size := 0
	for _, ref := range n.resources {
		text, err := readText(ctx, rd, ref)
		if err != nil {
			return "", err
		}
		if size += len(text); size > MaxResourceBytes {
			return "", fmt.Errorf("resource %s brings the resources of node %q to %d bytes, over the %d KiB an llm node's resources may hold together (they go with every request): give a smaller one, or let the model read it with a tool", ref, n.ID(), size, MaxResourceBytes>>10)
		}
		fmt.Fprintf(&b, "\n--- resource %s ---\n%s\n--- end of %s ---\n", ref, strings.TrimRight(text, "\n"), ref)
	}
	return b.String(), nil
}

// readText reads one resource's text: its text contents joined; a binary
// one is an error.
func readText(ctx context.Context, rd readyNodes, ref resourceRef) (string, error) {
	nd, err := rd.Ready(ctx, ref.node)
	if err != nil {
		return "", fmt.Errorf("resource %s: %w", ref, err)
	}
	rr, ok := nd.(resourceReader)
	if !ok {
		return "", fmt.Errorf("resource %s: node %s is a %s node, which serves no resources; name an mcp node's", ref, ref.node, nd.Info().Kind)
	}
	res, err := rr.ReadResource(ctx, ref.uri)
	if err != nil {
		return "", fmt.Errorf("resource %s: %w", ref, err)
	}
	var parts []string
	for _, c := range res.Contents {
		if c == nil {
			continue
		}
		if c.Text == "" && len(c.Blob) > 0 {
			return "", fmt.Errorf("resource %s is binary (%s): an llm node's resources must be text", ref, c.MIMEType)
		}
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n"), nil
}
