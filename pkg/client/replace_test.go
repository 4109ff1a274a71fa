package client_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

// TestReplace: Replace puts a new spec in a node's place and answers with
// the new node; one no factory builds, or for a node that is not there,
// changes nothing and says why.
func TestReplace(t *testing.T) {
	forModes(t, func(t *testing.T, newClient func() *client.Client, _ *slowKind) {
		ctx := ctxT(t)
		s := newClient().Session("default")
		if _, err := s.Add(ctx, node.Spec{ID: "n", Kind: "identity"}); err != nil {
			t.Fatal(err)
		}
		resp, err := s.Replace(ctx, node.Spec{ID: "n", Kind: "slow"})
		if err != nil || resp.Info.Kind != "slow" || resp.Info.State != node.Ready {
			t.Fatalf("Replace = %+v, %v; want a READY slow node", resp.Info, err)
		}
		if _, err := s.Replace(ctx, node.Spec{ID: "n", Kind: "nope"}); !errors.Is(err, client.ErrBadRequest) {
			t.Errorf("Replace with an unknown kind: %v, want ErrBadRequest", err)
		}
		if _, err := s.Replace(ctx, node.Spec{ID: "gone", Kind: "identity"}); !errors.Is(err, client.ErrNodeNotFound) {
			t.Errorf("Replace of a node that is not there: %v, want ErrNodeNotFound", err)
		}
		d, err := s.Node(ctx, "n")
		if err != nil || d.Spec.Kind != "slow" || d.Info.State != node.Ready {
			t.Errorf("after refused replaces: %+v, %v; want the slow node, READY", d, err)
		}
		if _, err := s.RunRecord(ctx, "n", "n.1"); !errors.Is(err, client.ErrUnsupported) {
			t.Errorf("RunRecord of a node that is not a graph: %v, want ErrUnsupported", err)
		}
	})
}

// TestReplaceIf: NodeTag answers the spec's tag; ReplaceIf with it
// replaces the node and answers the new tag; with a tag read before
// someone else's replace it fails with ErrChanged (HTTP 412) and changes
// nothing.
func TestReplaceIf(t *testing.T) {
	forModes(t, func(t *testing.T, newClient func() *client.Client, _ *slowKind) {
		ctx := ctxT(t)
		s := newClient().Session("default")
		if _, err := s.Add(ctx, node.Spec{ID: "n", Kind: "identity"}); err != nil {
			t.Fatal(err)
		}
		_, read, err := s.NodeTag(ctx, "n")
		if err != nil || read == "" {
			t.Fatalf("NodeTag = %q, %v; want a tag", read, err)
		}
		_, put, err := s.ReplaceIf(ctx, node.Spec{ID: "n", Kind: "identity", Cwd: "/mine"}, read)
		if err != nil {
			t.Fatalf("ReplaceIf with the tag just read: %v", err)
		}
		d, now, err := s.NodeTag(ctx, "n")
		if err != nil || put != now || now == read || d.Spec.Cwd != "/mine" {
			t.Fatalf("after ReplaceIf: %+v, tag %q (ReplaceIf answered %q, before %q), %v", d.Spec, now, put, read, err)
		}
		_, _, err = s.ReplaceIf(ctx, node.Spec{ID: "n", Kind: "identity", Cwd: "/theirs"}, read)
		var ce *client.Error
		if !errors.Is(err, client.ErrChanged) || !errors.As(err, &ce) || ce.Status != http.StatusPreconditionFailed {
			t.Errorf("ReplaceIf with a stale tag: %v, want ErrChanged (412)", err)
		}
		if d, err := s.Node(ctx, "n"); err != nil || d.Spec.Cwd != "/mine" {
			t.Errorf("a refused ReplaceIf changed the node: %+v, %v", d.Spec, err)
		}
	})
}
