// Command nerve is the nerve command line: the Commander REPL, the
// subcommands and the daemon. All of it lives in internal/cli.
package main

import (
	"context"
	"os"

	"github.com/nerve-dev/nerve/internal/cli"
)

func main() {
	os.Exit(cli.Run(context.Background(), os.Args[1:]))
}
