//go:build !unix

package testutil

import "testing"

// CPUMeter reports nothing where getrusage is missing.
func CPUMeter() func(*testing.B) { return func(*testing.B) {} }
