package llm

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/nerve-dev/nerve/internal/kindcli"
)

// anthropicBaseURL is the Messages API's root, the default of
// --provider anthropic.
const anthropicBaseURL = "https://api.anthropic.com"

// CLI is what `nerve node add llm` knows of the kind.
func CLI() *kindcli.Kind {
	return &kindcli.Kind{
		Kind:  Kind,
		Usage: "node add llm NAME --base-url URL --model M [--api-key '${VAR}'] [--tools LIST] [--discover] [--code] [--system TEXT] [--max-steps N] [--header 'K: V'] [--temperature X] [--max-tokens N] [--stream=false] [--timeout D] [--resource NODE:URI]",
		Help: `A conversation with a model behind an OpenAI-compatible API (or Anthropic's
Messages API with --provider anthropic), which may call
the session's tools named by --tools. Give the API key as a reference,
in single quotes so your shell leaves it alone: it is saved unexpanded and
read from the daemon's environment when the node starts.

Examples:
  nerve node add llm local --base-url http://127.0.0.1:8080/v1 --model qwen3 --tools fs,sh
  nerve node add llm gpt --base-url https://api.openai.com/v1 --model gpt-4o-mini --api-key '${OPENAI_API_KEY}' --tools '*'
  nerve node add llm claude-api --provider anthropic --model claude-sonnet-4-5 --api-key '${ANTHROPIC_API_KEY}' --tools '*'
  nerve node add llm many --base-url http://127.0.0.1:8080/v1 --model qwen3 --tools '*' --discover
  nerve node add llm coder --base-url http://127.0.0.1:8080/v1 --model qwen3 --tools fs,mem --code

--code offers the model run_script instead of the tools: it writes one
Starlark script that calls them as functions, nerve runs it, and only its
result goes back to the model (docs/code-mode.md).`,
		Flags: []*kindcli.Flag{
			kindcli.Timeout, kindcli.Header,
			{Name: "base-url", Value: "URL", Usage: "root of the model's API, e.g. http://127.0.0.1:8080/v1 (required for --provider openai; anthropic defaults to https://api.anthropic.com)"},
			{Name: "model", Value: "MODEL", Usage: "model name the server knows (required)"},
			{Name: "api-key", Value: "'${VAR}'", Usage: "API key as a reference to an environment variable of the daemon, in single quotes"},
			{Name: "allow-literal-key", Usage: "accept a literal --api-key (it is saved in clear text in the session's file)"},
			{Name: "tools", Value: "LIST", Usage: "session tools the model may call: node ids, globs (fs.read_*), * for all; comma-separated"},
			{Name: "discover", Usage: "offer the model search_tools and call_tool instead of every tool --tools chooses (for many tools)"},
			{Name: "code", Usage: "offer the model run_script, a script that calls the tools --tools chooses, instead of the tools"},
			{Name: "system", Value: "TEXT", Usage: "system prompt"},
			{Name: "max-steps", Value: "N", Usage: fmt.Sprintf("model requests per chat call at most (default %d)", DefaultMaxSteps)},
			{Name: "temperature", Value: "X", Usage: "sampling temperature"},
			{Name: "max-tokens", Value: "N", Usage: "bound on each answer's tokens"},
			{Name: "context-tokens", Value: "N", Usage: fmt.Sprintf("conversation budget in tokens (default %d)", DefaultContextTokens)},
			{Name: "provider", Value: "openai|anthropic", Values: []string{"anthropic", "openai"}, Usage: "API dialect: openai (default; every OpenAI-compatible server) or anthropic (the Messages API: --base-url https://api.anthropic.com --api-key '${ANTHROPIC_API_KEY}')"},
			{Name: "stream", Usage: "stream answers (default); --stream=false for servers that stream badly"},
			{Name: "resource", Value: "NODE:URI", Repeat: true, Usage: "a resource of another node whose text goes into the model's context, read at the start of every call (e.g. fs:file:///home/ada/README.md; at most 128 KiB in all)"},
		},
		NoFolder: true,
		Options:  cliOptions,
	}
}

// keyVar is the usual variable holding a provider's API key.
func keyVar(provider string) string {
	if provider == ProviderAnthropic {
		return "ANTHROPIC_API_KEY"
	}
	return "OPENAI_API_KEY"
}

// cliOptions returns the options of an llm node.
func cliOptions(_ context.Context, in *kindcli.Input) (any, error) {
	f := in.Flags
	o := Options{
		BaseURL:  f.Flag("base-url"),
		Model:    f.Flag("model"),
		APIKey:   f.Flag("api-key"),
		Tools:    ParseTools(f.Flag("tools")),
		Discover: f.Bool("discover"),
		Code:     f.Bool("code"),
		System:   f.Flag("system"),
		Provider: f.Flag("provider"),

		Resources: f.All("resource"),
	}
	if len(in.Spec.Command) > 0 {
		return o, kindcli.Usagef("an llm node runs no command (got %q): give --base-url and --model", strings.Join(in.Spec.Command, " "))
	}
	if o.BaseURL == "" && o.Provider == ProviderAnthropic {
		o.BaseURL = anthropicBaseURL
	}
	if o.BaseURL == "" || o.Model == "" {
		return o, kindcli.Usagef("an llm node needs --base-url URL and --model M (e.g. --base-url http://127.0.0.1:8080/v1 --model qwen3)")
	}
	if o.APIKey != "" && !strings.Contains(o.APIKey, "${") {
		if !f.Bool("allow-literal-key") {
			return o, kindcli.Usagef("--api-key is a literal key: it would be saved in clear text in the session's file; "+
				"pass a reference to a variable of the daemon's environment instead, in single quotes: --api-key '${%s}', "+
				"or keep it in the OS keychain (`nerve secret set %s`, then --api-key '${keychain:%s}') "+
				"(or add --allow-literal-key to save it anyway)", keyVar(o.Provider), keyVar(o.Provider), keyVar(o.Provider))
		}
		fmt.Fprintln(in.Stderr, "nerve: warning: --api-key is a literal key and is saved in clear text in the session's file; prefer --api-key '${VAR}'")
	}
	var err error
	if o.Headers, err = kindcli.HeadersOf(f); err != nil {
		return o, err
	}
	if o.Timeout, err = kindcli.TimeoutOf(f); err != nil {
		return o, err
	}
	if o.MaxSteps, err = kindcli.IntOf(f, "max-steps"); err != nil {
		return o, err
	}
	if o.MaxTokens, err = kindcli.IntOf(f, "max-tokens"); err != nil {
		return o, err
	}
	if o.ContextTokens, err = kindcli.IntOf(f, "context-tokens"); err != nil {
		return o, err
	}
	if t := f.Flag("temperature"); t != "" {
		x, err := strconv.ParseFloat(t, 64)
		if err != nil || x < 0 {
			return o, kindcli.Usagef("--temperature %q: use a number such as 0.2", t)
		}
		o.Temperature = &x
	}
	if f.Has("stream") {
		b := f.Bool("stream")
		o.Stream = &b
	}
	return o, nil
}
