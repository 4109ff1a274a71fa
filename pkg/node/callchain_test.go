package node

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestCallChain(t *testing.T) {
	ctx := context.Background()
	if c := CallChain(ctx); c != nil {
		t.Fatalf("chain outside a call = %v", c)
	}
	var err error
	for i := range MaxCallDepth {
		if ctx, err = WithHop(ctx, "s", "n"+string(rune('a'+i))); err != nil {
			t.Fatalf("hop %d: %v", i+1, err)
		}
	}
	_, err = WithHop(ctx, "s", "last")
	if !errors.Is(err, ErrCallDepth) || !strings.Contains(err.Error(), "s/na → s/nb") || !strings.Contains(err.Error(), "→ s/last") {
		t.Errorf("hop %d: %v; want ErrCallDepth naming the chain", MaxCallDepth+1, err)
	}
	// A branch does not see its sibling's hops.
	base, _ := WithHop(context.Background(), "s", "a")
	b1, _ := WithHop(base, "s", "b1")
	_, _ = WithHop(base, "s", "b2")
	if got := strings.Join(CallChain(b1), ","); got != "s/a,s/b1" {
		t.Errorf("chain = %q", got)
	}
	long := make([]string, 1000)
	for i := range long {
		long[i] = "x"
	}
	if _, err := WithCallChain(context.Background(), long); err == nil || len(err.Error()) > 1000 {
		t.Errorf("a 1000-hop chain from a request: %v", err)
	}
	if got := ChainFromMeta(map[string]any{ChainMetaKey: []any{"a", "b"}}); strings.Join(got, ",") != "a,b" {
		t.Errorf("ChainFromMeta = %v", got)
	}
	if got := ChainFromMeta(map[string]any{ChainMetaKey: "a"}); got != nil {
		t.Errorf("ChainFromMeta of a string = %v", got)
	}
}
