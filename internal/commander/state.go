package commander

import (
	"fmt"

	"github.com/nerve-dev/nerve/pkg/api"
)

// NodeNote says, for a node that is not running, what its tools are
// worth and what a call to it does, in the shell's syntax; "" for a node
// that takes calls at once. It follows the session's waiting rule
// (docs/nodes.md, States): a lazy node (details "lazy", a catalogue) is
// started by its first call; a node stopped with `nerve node stop`, in
// ERROR, or not started refuses calls until started. `nerve tools`,
// `nerve call @n ?` and the Commander's `@n ?` show it beside a node's
// tools, so listed tools are never taken for callable ones.
func NodeNote(info api.Info) string {
	st := info.State.String()
	switch info.State {
	case api.StateReady, api.StateBusy:
		return ""
	case api.StateStarting:
		return fmt.Sprintf("@%s is STARTING: a call waits for it", info.ID)
	case api.StateStopping:
		return fmt.Sprintf("@%s is STOPPING: a call waits for it to stop, then fails", info.ID)
	case api.StateError:
		reason := firstLine(info.Error)
		if reason != "" {
			reason = " (" + reason + ")"
		}
		return fmt.Sprintf("@%s is ERROR%s: a call fails until `nerve node restart %s`", info.ID, reason, info.ID)
	}
	if lazy, _ := info.Details["lazy"].(bool); lazy {
		return fmt.Sprintf("@%s is %s: its tools come from its catalogue, and its first call starts it", info.ID, st)
	}
	return fmt.Sprintf("@%s is %s: a call fails until `nerve node start %s` starts it", info.ID, st, info.ID)
}
