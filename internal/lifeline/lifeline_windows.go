//go:build windows

package lifeline

// Lifeline has no Windows form yet (a job object would be one).
type Lifeline struct{}

// Start returns nil on Windows.
func Start(t Target) *Lifeline { return nil }

// Release does nothing on Windows.
func (l *Lifeline) Release() {}

// Pid returns 0 on Windows.
func (l *Lifeline) Pid() int { return 0 }
