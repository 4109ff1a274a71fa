// Command nerve is the nerve command line. This program is its front
// (internal/front): it makes a one-shot `nerve call` to a running daemon
// itself, linking little more than the standard library, and hands every
// other command to nerve-core, the whole program, installed beside it
// (go install ./cmd/...) or, run from a checkout (go run ./cmd/nerve),
// built from it.
package main

import (
	"os"

	"github.com/nerve-dev/nerve/internal/front"
)

func main() {
	os.Exit(front.Run(os.Args))
}
