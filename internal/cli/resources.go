package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nerve-dev/nerve/internal/commander"
	"github.com/nerve-dev/nerve/pkg/client/mcpclient"
)

// The commands on what an mcp node offers beyond tools.

func resourcesCmd() *Command {
	return &Command{
		Name:     "resources",
		Summary:  "list an mcp node's resources and resource templates",
		Usage:    "resources NODE",
		Complete: "node",
		Run:      runResources,
	}
}

func readCmd() *Command {
	return &Command{
		Name:    "read",
		Summary: "read a resource of an mcp node",
		Usage:   "read NODE URI",
		Help: `Text is printed as it is; binary contents (blobs) are saved to a file
under nerve's state folder and its path printed.

Example:
  nerve read everything test://static/resource/1`,
		Complete: "node",
		Run:      runRead,
	}
}

func promptsCmd() *Command {
	return &Command{
		Name:     "prompts",
		Summary:  "list an mcp node's prompts and their arguments",
		Usage:    "prompts NODE",
		Complete: "node",
		Run:      runPrompts,
	}
}

func promptCmd() *Command {
	return &Command{
		Name:    "prompt",
		Summary: "get one prompt of an mcp node, filled with arguments",
		Usage:   "prompt NODE NAME [KEY=VALUE...]",
		Help: `Prints the prompt's messages, each under its role.

Example:
  nerve prompt everything complex_prompt temperature=0.7 style=terse`,
		Complete: "node",
		Run:      runPrompt,
	}
}

func runResources(ctx context.Context, env *Env, inv *Invocation) error {
	id, s, err := oneNodeSession(ctx, env, inv)
	if err != nil {
		return err
	}
	r, err := mcpclient.Resources(ctx, s, id)
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, r)
	}
	if len(r.Resources) == 0 && len(r.Templates) == 0 {
		fmt.Fprintf(env.Stderr, "@%s offers no resources\n", id)
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	if len(r.Resources) > 0 {
		fmt.Fprintln(tw, "URI\tNAME\tMIME\tSIZE")
		for _, res := range r.Resources {
			size := "-"
			if res.Size > 0 {
				size = fmt.Sprint(res.Size)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", res.URI, orDash(res.Name), orDash(res.MIMEType), size)
		}
	}
	if len(r.Templates) > 0 {
		if len(r.Resources) > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintln(tw, "TEMPLATE\tNAME\tMIME\tDESCRIPTION")
		for _, t := range r.Templates {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.URITemplate, orDash(t.Name), orDash(t.MIMEType), firstLine(t.Description))
		}
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runRead(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) != 2 {
		return usagef(inv, "`nerve read` needs NODE and URI (list the URIs with `nerve resources NODE`)")
	}
	id, uri := inv.Args[0], inv.Args[1]
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	res, err := mcpclient.ReadResource(ctx, s, id, uri)
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, res)
	}
	if len(res.Contents) == 0 {
		fmt.Fprintf(env.Stderr, "%s is empty\n", uri)
	}
	for _, c := range res.Contents {
		if c.Blob == nil {
			if err := writeText(env.Stdout, c.Text); err != nil {
				return err
			}
			continue
		}
		p, err := env.saveBlob(id, c)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "%s: %s, %d bytes, saved to\n", c.URI, orDash(c.MIMEType), len(c.Blob))
		fmt.Fprintln(env.Stdout, p)
	}
	return nil
}

// writeText writes s, ending it with a newline if it has none.
func writeText(w io.Writer, s string) error {
	if _, err := io.WriteString(w, s); err != nil {
		return err
	}
	if s != "" && !strings.HasSuffix(s, "\n") {
		_, err := io.WriteString(w, "\n")
		return err
	}
	return nil
}

// saveBlob writes the binary contents of a resource to a new file under
// the state folder (resources/), named after the node and the URI's last
// segment, and returns its path.
func (e *Env) saveBlob(nodeID string, c *mcp.ResourceContents) (string, error) {
	p, err := e.paths()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(p.State, "resources")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("making a folder for the resource: %w", err)
	}
	base := safeName(path.Base(strings.TrimRight(c.URI, "/")))
	ext := filepath.Ext(base)
	if ext == "" && c.MIMEType != "" {
		ext = commander.Extension(c.MIMEType)
	}
	base = strings.TrimSuffix(base, filepath.Ext(base))
	f, err := os.CreateTemp(dir, nodeID+"-"+base+"-*"+ext)
	if err != nil {
		return "", fmt.Errorf("saving the resource: %w", err)
	}
	_, err = f.Write(c.Blob)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("saving the resource to %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// safeName keeps letters, digits, '.', '_' and '-' of s (at most 60).
func safeName(s string) string {
	b := []byte(s)
	out := b[:0]
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
			out = append(out, c)
		default:
			out = append(out, '_')
		}
	}
	s = strings.Trim(string(out), "._")
	if len(s) > 60 {
		s = s[:60]
	}
	if s == "" {
		return "resource"
	}
	return s
}

func runPrompts(ctx context.Context, env *Env, inv *Invocation) error {
	id, s, err := oneNodeSession(ctx, env, inv)
	if err != nil {
		return err
	}
	ps, err := mcpclient.Prompts(ctx, s, id)
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, ps)
	}
	if len(ps) == 0 {
		fmt.Fprintf(env.Stderr, "@%s offers no prompts\n", id)
		return nil
	}
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Name)
		if p.Description != "" {
			b.WriteString("  " + firstLine(p.Description))
		}
		b.WriteString("\n")
		for _, a := range p.Arguments {
			req := ""
			if a.Required {
				req = " (required)"
			}
			fmt.Fprintf(&b, "    %s%s", a.Name, req)
			if a.Description != "" {
				b.WriteString("  " + firstLine(a.Description))
			}
			b.WriteString("\n")
		}
	}
	_, err = io.WriteString(env.Stdout, b.String())
	return err
}

func runPrompt(ctx context.Context, env *Env, inv *Invocation) error {
	if len(inv.Args) < 2 {
		return usagef(inv, "`nerve prompt` needs NODE and NAME (list the prompts with `nerve prompts NODE`)")
	}
	id, name := inv.Args[0], inv.Args[1]
	args := map[string]string{}
	for _, kv := range inv.Args[2:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usagef(inv, "prompt argument %q: use KEY=VALUE", kv)
		}
		args[k] = v
	}
	s, err := env.session(ctx)
	if err != nil {
		return err
	}
	res, err := mcpclient.GetPrompt(ctx, s, id, name, args)
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, res)
	}
	var b strings.Builder
	if res.Description != "" {
		fmt.Fprintf(&b, "# %s\n\n", res.Description)
	}
	for i, m := range res.Messages {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[%s]\n", m.Role)
		b.WriteString(contentText(m.Content))
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
	}
	_, err = io.WriteString(env.Stdout, b.String())
	return err
}

// contentText renders one content block of a prompt message for people.
func contentText(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		return fmt.Sprintf("(image, %s, %d bytes)", c.MIMEType, len(c.Data))
	case *mcp.AudioContent:
		return fmt.Sprintf("(audio, %s, %d bytes)", c.MIMEType, len(c.Data))
	case *mcp.ResourceLink:
		return fmt.Sprintf("(resource link %s)", c.URI)
	case *mcp.EmbeddedResource:
		if c.Resource == nil {
			return "(embedded resource)"
		}
		if c.Resource.Blob == nil {
			return fmt.Sprintf("(resource %s)\n%s", c.Resource.URI, c.Resource.Text)
		}
		return fmt.Sprintf("(resource %s, %s, %d bytes: read it with `nerve read`)", c.Resource.URI, orDash(c.Resource.MIMEType), len(c.Resource.Blob))
	default:
		return fmt.Sprintf("(%T content)", c)
	}
}
