//go:build !unix

package bash

import (
	"fmt"
	"runtime"

	"github.com/nerve-dev/nerve/pkg/node"
)

// New reports that bash nodes need a Unix system.
func New(spec node.Spec, env node.Env) (node.Node, error) {
	return nil, fmt.Errorf("bash node is not supported on %s (run nerve on Linux or macOS, or inside WSL)", runtime.GOOS)
}
