//go:build !unix

package mcpserver_test

import "testing"

func cpuMeter() func(*testing.B) { return func(*testing.B) {} }
