package api

// A graph's run tool reports each step as a call event of kind EventStep
// (Step "graph") whose Data is a StepEvent (docs/graphs.md, "Events").

// Step states, as a graph's step events and run records name them.
const (
	StepStarted  = "started"
	StepFinished = "finished"
	StepFailed   = "failed"
	StepRetried  = "retried"
	StepSkipped  = "skipped"
	// StepAsked is an ask: step whose question was put to someone: Reason
	// says who (a Commander, an MCP client); the step waits for the
	// answer. It appears in events only.
	StepAsked = "asked"
	// StepCancelled is a step stopped because the run ended (another step
	// failed, or the caller cancelled); it appears in run records only.
	StepCancelled = "cancelled"
)

// StepEvent is something that happened to a step of a graph run.
type StepEvent struct {
	Step    string  `json:"step"`
	State   string  `json:"state"`
	Attempt int     `json:"attempt,omitempty"`
	Millis  float64 `json:"ms,omitempty"`
	Error   string  `json:"error,omitempty"`
	// Reason says why a step was skipped ("when", "on_error", "resumed")
	// or failed without failing the run ("continue").
	Reason string `json:"reason,omitempty"`
}

// MetaResume is the key of a graph call's _meta that names an interrupted
// run to finish instead of starting anew (nerve graph resume). It is not
// an input: a model filling in the tool's arguments never sees it.
const MetaResume = "nerve.dev/resume"
