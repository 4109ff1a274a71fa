// Command hello prints "hello": the floor a one-shot `nerve call` is
// measured against (BenchmarkOneShotRatio), a Go process that starts,
// writes a line and exits.
package main

import "os"

func main() { os.Stdout.WriteString("hello\n") }
