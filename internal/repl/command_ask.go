package repl

import "context"

type commandAskKey struct{}

// WithAsk returns ctx carrying ask, which puts a question to the person
// on the Commander's own prompt line and returns the line they typed
// (an error for Ctrl-C or Ctrl-D). The Commander gives it to every
// `:`-command it runs, so one that needs a yes (`:plan`) can ask while the
// REPL holds the terminal.
func WithAsk(ctx context.Context, ask func(prompt string) (string, error)) context.Context {
	return context.WithValue(ctx, commandAskKey{}, ask)
}

// Asker returns the ask function ctx carries, nil outside the Commander.
func Asker(ctx context.Context) func(prompt string) (string, error) {
	ask, _ := ctx.Value(commandAskKey{}).(func(string) (string, error))
	return ask
}
