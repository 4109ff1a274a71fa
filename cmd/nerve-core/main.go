// Command nerve-core is the whole of nerve: the Commander REPL, every
// subcommand and the daemon (internal/cli). People run it as nerve: the
// nerve command (cmd/nerve) is a small front that makes one-shot calls
// itself and hands everything else to this program, which is installed
// beside it (go install ./cmd/...).
package main

import (
	"context"
	"os"

	"github.com/nerve-dev/nerve/internal/cli"
)

func main() {
	os.Exit(cli.Run(context.Background(), os.Args[1:]))
}
