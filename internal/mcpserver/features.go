package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/pkg/node"
)

// syncFeatures serves the resources, templates and prompts of mcp nodes,
// whatever their state, as tools are: a node not running answers from its
// catalogue, and a read or a prompt starts it or says why it cannot run.
func (s *Server) syncFeatures(ctx context.Context) {
	infos, err := s.b.Nodes(ctx)
	if err != nil {
		s.log.Warn("listing nodes", zap.Error(err))
		return
	}
	var ids []string
	for _, in := range infos {
		if s.opts.Node == "" || in.ID == s.opts.Node {
			ids = append(ids, in.ID)
		}
	}
	res, tmpl, prompts := map[string]served{}, map[string]served{}, map[string]served{}
	resDefs := map[string]*mcp.Resource{}
	tmplDefs := map[string]*mcp.ResourceTemplate{}
	promptDefs := map[string]*mcp.Prompt{}
	for _, id := range ids {
		mn, err := s.b.MCPNode(ctx, id)
		if err != nil {
			if !errors.Is(err, ErrNoFeatures) && !errors.Is(err, node.ErrNotFound) {
				s.log.Debug("features of node", zap.String("node", id), zap.Error(err))
			}
			continue
		}
		f := FeaturesOf(mn)
		// URIs are served as the servers give them; the first node to
		// offer a URI gets it.
		for _, r := range f.Resources {
			if _, dup := res[r.URI]; !dup && r.URI != "" {
				res[r.URI] = served{node: id, name: r.URI, fp: id + "\x00" + fingerprint(r)}
				resDefs[r.URI] = r
			}
		}
		for _, t := range f.Templates {
			if _, dup := tmpl[t.URITemplate]; !dup && t.URITemplate != "" {
				tmpl[t.URITemplate] = served{node: id, name: t.URITemplate, fp: id + "\x00" + fingerprint(t)}
				tmplDefs[t.URITemplate] = t
			}
		}
		for _, p := range f.Prompts {
			name := p.Name
			if s.opts.Node == "" {
				name = node.QualifiedName(id, p.Name)
				if s.opts.Names == NamesLLM {
					name = node.LLMName(id, p.Name)
				}
			}
			if _, dup := prompts[name]; !dup {
				prompts[name] = served{node: id, name: p.Name, fp: id + "\x00" + fingerprint(p)}
				promptDefs[name] = p
			}
		}
	}
	apply(s.resources, res, s.srv.RemoveResources, func(key string, sv served) error {
		return guard(func() { s.srv.AddResource(resDefs[key], s.resourceHandler(sv.node)) })
	}, s.log)
	apply(s.templates, tmpl, s.srv.RemoveResourceTemplates, func(key string, sv served) error {
		return guard(func() { s.srv.AddResourceTemplate(tmplDefs[key], s.resourceHandler(sv.node)) })
	}, s.log)
	apply(s.prompts, prompts, s.srv.RemovePrompts, func(key string, sv served) error {
		p := *promptDefs[key]
		p.Name = key
		return guard(func() { s.srv.AddPrompt(&p, s.promptHandler(sv.node, sv.name)) })
	}, s.log)
}

// apply moves cur to want: removes what is gone, adds what is new or
// changed.
func apply(cur, want map[string]served, remove func(...string), add func(string, served) error, log *zap.Logger) {
	var gone []string
	for k := range cur {
		if _, ok := want[k]; !ok {
			gone = append(gone, k)
		}
	}
	if len(gone) > 0 {
		remove(gone...)
		for _, k := range gone {
			delete(cur, k)
		}
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		sv := want[k]
		if c, ok := cur[k]; ok && c.fp == sv.fp {
			continue
		}
		if err := add(k, sv); err != nil {
			log.Warn("cannot serve", zap.String("node", sv.node), zap.String("item", k), zap.Error(err))
			continue
		}
		cur[k] = sv
	}
}

// guard turns a panic of the SDK server on a malformed item (from a
// misbehaving server behind a node) into an error.
func guard(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}
