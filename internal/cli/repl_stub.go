package cli

import (
	"context"
	"errors"
)

// RunREPL is replaced by the Commander REPL (repl.go).
func RunREPL(ctx context.Context, env *Env) error {
	return errors.New("REPL not built yet: use a subcommand (see `nerve --help`)")
}
