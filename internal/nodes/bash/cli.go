package bash

import (
	"context"

	"github.com/nerve-dev/nerve/internal/kindcli"
)

// CLI is what `nerve node add bash` knows of the kind.
func CLI() *kindcli.Kind {
	return &kindcli.Kind{
		Kind:  Kind,
		Usage: "node add bash NAME [--cwd DIR] [--env K=V] [--timeout D] [-- BASH ARGS...]",
		Help: `A persistent bash shell: its folder, variables and functions survive
between calls.

Examples:
  nerve node add bash sh --cwd /srv
  nerve node add bash sh --env PATH='${HOME}/bin:${PATH}' --timeout 10m`,
		Flags: []*kindcli.Flag{kindcli.Cwd, kindcli.Env, kindcli.Timeout},
		Options: func(_ context.Context, in *kindcli.Input) (any, error) {
			t, err := kindcli.TimeoutOf(in.Flags)
			return Options{Timeout: t}, err
		},
	}
}
