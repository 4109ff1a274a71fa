package repl

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nerve-dev/nerve/pkg/api"
)

// graphSteps is the live view of a graph's steps in the REPL's status
// line: the steps running now and for how long. Finished, failed, retried
// and skipped steps are printed as lines above it (callview.GraphStepLine).
type graphSteps struct {
	running map[string]time.Time
	order   []string
}

// update takes one step event's data.
func (g *graphSteps) update(data []byte) {
	var ev api.StepEvent
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	if g.running == nil {
		g.running = map[string]time.Time{}
	}
	switch ev.State {
	case api.StepStarted:
		if _, ok := g.running[ev.Step]; !ok {
			g.order = append(g.order, ev.Step)
		}
		g.running[ev.Step] = time.Now()
	case api.StepRetried, api.StepAsked:
		// still running
	default:
		delete(g.running, ev.Step)
		for i, id := range g.order {
			if id == ev.Step {
				g.order = append(g.order[:i], g.order[i+1:]...)
				break
			}
		}
	}
}

// String is "running: read 1.2s, stats 0.3s" or "".
func (g *graphSteps) String() string {
	if len(g.order) == 0 {
		return ""
	}
	parts := make([]string, 0, min(len(g.order), 4))
	for i, id := range g.order {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("+%d more", len(g.order)-3))
			break
		}
		parts = append(parts, id+" "+time.Since(g.running[id]).Round(100*time.Millisecond).String())
	}
	return "running: " + strings.Join(parts, ", ")
}
