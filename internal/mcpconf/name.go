package mcpconf

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"slices"
	"strings"
)

// Source is where a server of a config file is written: the file (as
// Parse was given it), the line of the server's name, and the name.
type Source struct {
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Server string `json:"server,omitempty"`
}

// String is "FILE:LINE (server "NAME")".
func (s *Source) String() string {
	if s == nil {
		return ""
	}
	at := s.File
	if s.Line > 0 {
		at = fmt.Sprintf("%s:%d", s.File, s.Line)
	}
	if s.Server != "" {
		at += fmt.Sprintf(" (server %q)", s.Server)
	}
	return at
}

// entryName names an entry of a "servers" array that has no "name", after
// what it runs: the package a runner (npx, uvx, docker run, …) fetches, the
// script or program it starts, or the host of its URL.
func entryName(v value) string {
	var argv []string
	u := ""
	for _, m := range members(v) {
		switch m.key {
		case "command":
			switch m.val.kind() {
			case "string":
				argv = append([]string{m.val.str()}, argv...)
			case "array":
				var cmd []string
				for _, e := range elements(m.val) {
					cmd = append(cmd, e.str())
				}
				argv = append(cmd, argv...)
			}
		case "args":
			for _, e := range elements(m.val) {
				argv = append(argv, e.str())
			}
		case "url":
			u = m.val.str()
		}
	}
	name := ""
	switch {
	case len(argv) > 0 && argv[0] != "":
		name = commandName(argv)
	case u != "":
		name = urlName(u)
	}
	if name == "" {
		name = "server"
	}
	return name
}

// runners are programs that fetch or run a package named by their first
// operand, and the flags of theirs that take a value (skipped with it).
var runners = map[string][]string{
	"npx": {"-p", "--package", "-c", "--call"}, "bunx": {"-p", "--package"}, "pnpx": nil,
	"uvx": {"--from", "--with", "--python", "-p"}, "pipx": {"--spec", "--python"},
	"docker": {"-e", "--env", "-v", "--volume", "-p", "--publish", "--name", "--network", "--net", "-w", "--workdir", "--mount", "--env-file", "-u", "--user", "--entrypoint", "-l", "--label", "--platform", "--pull", "--cpus", "-m", "--memory", "--add-host", "-h", "--hostname"},
	"podman": nil, "deno": {"--allow-read", "--allow-net", "--allow-env", "--allow-write"},
	"node": {"-r", "--require", "--import"}, "bun": nil, "python": {"-X", "-W"}, "python3": {"-X", "-W"},
	"uv": {"--directory", "--with", "--python", "--from"}, "go": {"-C", "-tags", "-mod"},
	"pnpm": nil, "yarn": nil, "npm": nil,
}

// skipWords are operands of a runner that are its subcommand, not the
// package: `docker run`, `pnpm dlx`, `uv run`, `pipx run`, `deno run`.
var skipWords = map[string]bool{"run": true, "dlx": true, "exec": true, "x": true, "tool": true}

// commandName names a command line after its package or program.
func commandName(argv []string) string {
	prog := trimExt(path.Base(strings.ReplaceAll(argv[0], `\`, "/")))
	valued, isRunner := runners[strings.ToLower(prog)]
	if !isRunner {
		return prog
	}
	if prog == "podman" {
		valued = runners["docker"]
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			continue
		case strings.HasPrefix(a, "-"):
			if prog == "python" || prog == "python3" {
				if a == "-m" && i+1 < len(argv) {
					return argv[i+1] // python -m module
				}
			}
			if (a == "-p" || a == "--package" || a == "--from" || a == "--spec") && (prog == "npx" || prog == "bunx" || prog == "uvx" || prog == "pipx") && i+1 < len(argv) {
				return packageName(argv[i+1])
			}
			if !strings.Contains(a, "=") && slices.Contains(valued, a) {
				i++
			}
		case skipWords[a]:
		default:
			if prog == "node" || prog == "bun" || prog == "deno" || strings.HasPrefix(prog, "python") {
				return scriptName(a)
			}
			return packageName(a)
		}
	}
	return prog
}

// packageName is a package or image without its scope, registry, version
// or tag: "@modelcontextprotocol/server-filesystem@1.2" → "server-filesystem",
// "ghcr.io/github/github-mcp-server:latest" → "github-mcp-server",
// "git+https://github.com/o/mcp-x" → "mcp-x".
func packageName(p string) string {
	p = strings.TrimSuffix(strings.TrimSuffix(p, "/"), ".git")
	if i := strings.LastIndex(p, "/"); i >= 0 {
		p = p[i+1:]
	}
	if i := strings.IndexAny(p, "@:=<>[ "); i > 0 {
		p = p[:i]
	}
	return strings.TrimPrefix(p, "@")
}

// scriptName names a script after its file, or after its folder when the
// file's name says nothing ("build/index.js" of "weather" → "weather").
func scriptName(p string) string {
	p = strings.TrimSuffix(strings.ReplaceAll(p, `\`, "/"), "/")
	for p != "" && p != "." && p != "/" {
		b := trimExt(path.Base(p))
		switch strings.ToLower(b) {
		case "index", "main", "server", "dist", "build", "src", "lib", "bin", "cli", "__main__", "app", "out":
			p = path.Dir(p)
			continue
		}
		return b
	}
	return ""
}

// urlName names a server after its URL's host, with the port for a
// loopback one ("localhost-3000"), where the host says little.
func urlName(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	h := u.Hostname()
	if ip := net.ParseIP(h); h == "localhost" || ip != nil && ip.IsLoopback() {
		if u.Port() != "" {
			return "localhost-" + u.Port()
		}
		return "localhost"
	}
	return h
}

// trimExt drops a program's or script's extension.
func trimExt(b string) string {
	for _, ext := range []string{".exe", ".cmd", ".bat", ".js", ".mjs", ".cjs", ".ts", ".py", ".sh"} {
		if strings.HasSuffix(strings.ToLower(b), ext) && len(b) > len(ext) {
			return b[:len(b)-len(ext)]
		}
	}
	return b
}

// uniqueName is name, or name-2, name-3, … when one of taken has it.
func uniqueName(name string, taken ...map[string]int) string {
	out := name
	for n := 2; ; n++ {
		free := true
		for _, t := range taken {
			if _, ok := t[out]; ok {
				free = false
			}
		}
		if free {
			return out
		}
		out = fmt.Sprintf("%s-%d", name, n)
	}
}
