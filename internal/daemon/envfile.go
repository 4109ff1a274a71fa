package daemon

import (
	"path/filepath"

	"github.com/nerve-dev/nerve/internal/paths"
)

// EnvFile is the private env file of the daemon with paths p: variables
// its nodes' ${VAR} references resolve against after the environment of
// the client that added them (restored nodes have none) and before the
// daemon's own. `nerve env` edits it.
func EnvFile(p paths.Paths) string { return filepath.Join(p.State, "env") }
