//go:build unix

package testutil

import (
	"syscall"
	"testing"
	"time"
)

// CPUMeter starts measuring the process's CPU time (user + system, all
// threads); the function it returns reports it per op as cpu-µs/op. Call
// it just before a benchmark's loop and the function just after: on a
// shared machine CPU time per op moves far less with other people's load
// than time per op does.
func CPUMeter() func(*testing.B) {
	start := cpuTime()
	return func(b *testing.B) {
		b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
