package cli

import (
	"context"
	"testing"

	"github.com/nerve-dev/nerve/internal/daemon"
	"github.com/nerve-dev/nerve/internal/nodes/all"
	"github.com/nerve-dev/nerve/pkg/client"
	"github.com/nerve-dev/nerve/pkg/node"
)

// misspeltAfterToolName are lines that name a single-tool node's tool and
// then misspell its parameter: each must be refused with did-you-mean,
// never run with the whole line as the free text (issue 27 item 5;
// docs/commander.md, "The argument rule").
var misspeltAfterToolName = []struct{ line, want string }{
	{"@id identity tex=hi", `unknown argument "tex" for @id identity — did you mean text?`},
	{"@bash bash comand=pwd", `unknown argument "comand" for @bash bash — did you mean command?`},
}

// TestCallLineRouteRefusesMisspeltKey: the daemon's call route, given a
// line (api.CallRequest.Line) that misspells a single-tool node's
// parameter after its tool name, calls nothing and answers with the
// node's tools, for the client to say what is wrong (issue 27 item 5).
func TestCallLineRouteRefusesMisspeltKey(t *testing.T) {
	ctx := context.Background()
	emb, err := daemon.StartEmbedded(ctx, &daemon.Options{Registry: all.Registry(nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emb.Close(context.Background()) })
	c := client.New(client.Options{Dial: emb.Dial})
	t.Cleanup(func() { c.Close() })
	s := c.Session("default")
	for _, sp := range []node.Spec{{ID: "id", Kind: "identity"}, {ID: "bash", Kind: "bash"}} {
		if _, err := s.Add(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range misspeltAfterToolName {
		id := lineNode(tt.line)
		res, tools, err := s.CallLine(ctx, id, tt.line, nil)
		if err != nil || res != nil || tools == nil {
			t.Errorf("call line %q: result %s, tools %s, error %v; want the node's tools and no call", tt.line, res, tools, err)
		}
	}
	for _, id := range []string{"id", "bash"} {
		d, err := s.Node(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Info.Calls != 0 {
			t.Errorf("@%s was called %d times", id, d.Info.Calls)
		}
	}
}
