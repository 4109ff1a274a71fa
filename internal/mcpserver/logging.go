package mcpserver

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/pkg/node"
)

// setLevel passes a log level to the node (node mode) or to every mcp
// node that is up; the Go SDK's servers send no log message before.
func (s *Server) setLevel(ctx context.Context, level string) {
	ids := []string{s.opts.Node}
	if s.opts.Node == "" {
		ids = ids[:0]
		infos, _ := s.b.Nodes(ctx)
		for _, in := range infos {
			if in.State == node.Ready || in.State == node.Busy {
				ids = append(ids, in.ID)
			}
		}
	}
	for _, id := range ids {
		// A level goes to nodes that are running: it starts no lazy node
		// (a client sets a level right after it connects).
		f, err := s.b.MCPNode(ctx, id)
		if err == nil {
			err = f.SetLoggingLevel(ctx, level)
		}
		if err != nil && !errors.Is(err, ErrNoFeatures) {
			s.log.Debug("passing logging/setLevel to a node", zap.String("node", id), zap.Error(err))
		}
	}
}
