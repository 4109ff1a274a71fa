package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// complete answers completion/complete: the node serving the prompt or
// resource the ref names completes the argument.
func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := *req.Params
	if p.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs a ref"}
	}
	ref := *p.Ref
	p.Ref = &ref
	var id string
	switch ref.Type {
	case "ref/prompt":
		if s.opts.Node != "" {
			id = s.opts.Node
			break
		}
		s.syncMu.Lock()
		sv, ok := s.prompts[ref.Name]
		s.syncMu.Unlock()
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", ref.Name)}
		}
		id, ref.Name = sv.node, sv.name
	case "ref/resource":
		var ok bool
		if id, ok = s.nodeOfURI(ref.URI); !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no node serves %q", ref.URI)}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown ref type %q", ref.Type)}
	}
	f, err := s.b.RunningMCPNode(ctx, id)
	if err != nil {
		return nil, err
	}
	res, err := f.Complete(ctx, &p)
	if err != nil {
		return nil, err
	}
	return res, nil
}
