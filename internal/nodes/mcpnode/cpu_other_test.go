//go:build !unix

package mcpnode

import "testing"

func cpuMeter() func(*testing.B) { return func(*testing.B) {} }
