//go:build windows

package childproc

// KillAll ends the child; Windows has no process groups or markers to
// follow here (its descendants are not tracked).
func (p *Proc) KillAll(extraGroups ...int) { killGroup(p.pid) }
