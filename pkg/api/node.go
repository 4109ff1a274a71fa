package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The node vocabulary on the wire. pkg/node and pkg/session alias these
// types (node.Info = api.Info, session.Event = api.Event), so a node's
// Info, a saved spec and the wire body are one type that cannot drift,
// and a client needs neither package.

// State is the lifecycle state of a node (pkg/node holds its one
// transition table).
//
//	CREATED → STARTING → READY ⇄ BUSY → STOPPING → STOPPED
//	STARTING, READY, BUSY → ERROR → STOPPING;  STOPPED → STARTING (restart)
type State uint8

// The states (pkg/node names them node.Created, …, node.Error).
const (
	StateCreated State = iota
	StateStarting
	StateReady
	StateBusy
	StateStopping
	StateStopped
	StateError
)

var stateNames = [...]string{"CREATED", "STARTING", "READY", "BUSY", "STOPPING", "STOPPED", "ERROR"}

// NumStates is how many states there are.
const NumStates = len(stateNames)

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", s)
}

// MarshalText makes a State appear by name in JSON.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a State name.
func (s *State) UnmarshalText(b []byte) error {
	st, err := ParseState(string(b))
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// ParseState returns the State with the given name.
func ParseState(name string) (State, error) {
	for i, n := range stateNames {
		if n == name {
			return State(i), nil
		}
	}
	return 0, fmt.Errorf("unknown node state %q (want one of %v)", name, stateNames)
}

// Sentinel errors callers test with errors.Is (also node.ErrNotReady, …).
var (
	ErrNotReady    = errors.New("node is not ready")
	ErrUnknownTool = errors.New("unknown tool")
	ErrBadArgs     = errors.New("invalid arguments")
	ErrNotFound    = errors.New("node not found")
)

// CallEvent kinds.
const (
	EventProgress = "progress" // Progress, Total, Message
	EventLog      = "log"      // Level, Logger, Data
	EventText     = "text"     // Text: streamed output to show as it arrives
	EventStep     = "step"     // Step, Data: a structured step (tool use, tool result, usage, thinking)
)

// CallEvent is something that happened during a call: a node reports it
// to its caller, and the daemon streams it as a CallLine.
type CallEvent struct {
	Kind     string          `json:"kind"`
	Progress float64         `json:"progress,omitempty"`
	Total    float64         `json:"total,omitempty"`
	Message  string          `json:"message,omitempty"`
	Level    string          `json:"level,omitempty"`
	Logger   string          `json:"logger,omitempty"`
	Text     string          `json:"text,omitempty"`
	Step     string          `json:"step,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
}

// Info describes a node for people and tools.
type Info struct {
	ID       string    `json:"id"`
	Kind     string    `json:"kind"`
	State    State     `json:"state"`
	Error    string    `json:"error,omitempty"`
	Since    time.Time `json:"since,omitzero"`
	Tools    int       `json:"tools"`
	InFlight int64     `json:"in_flight"`
	Calls    int64     `json:"calls"`
	Failures int64     `json:"failures"`
	// Summary is a one-line description of what the node runs.
	Summary string `json:"summary,omitempty"`
	// Details holds kind-specific facts (server info, Claude session id, …).
	Details map[string]any `json:"details,omitempty"`
}

// Spec is the serialisable description a node is built from. Sessions save
// specs (with ${VAR} references unexpanded) and rebuild nodes from them.
type Spec struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Command is the program and arguments for process-backed kinds.
	Command []string          `json:"command,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// Options holds kind-specific settings; see DecodeOptions.
	Options json.RawMessage `json:"options,omitempty"`
	// State is node-owned data that must survive a restart of the daemon
	// (a Claude session id, an LLM conversation). Nodes update it through
	// Env.SaveState.
	State json.RawMessage `json:"state,omitempty"`
	// Stopped says the person stopped the node (`nerve node stop`, or a
	// server imported disabled): the session keeps it, with its settings
	// and catalogue, but neither starts it — on add, on a daemon restart
	// or on a call — nor lists its tools, until `nerve node start`.
	Stopped bool `json:"stopped,omitempty"`
	// Overrides change how the session shows and calls the node's tools,
	// keyed by each tool's own name (ToolOverride).
	Overrides map[string]ToolOverride `json:"overrides,omitempty"`
}

// DecodeOptions decodes s.Options into v, rejecting unknown fields so a typo
// in a saved spec is reported rather than ignored.
func (s *Spec) DecodeOptions(v any) error {
	if len(s.Options) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(s.Options))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("options of %s node %q: %w", s.Kind, s.ID, err)
	}
	return nil
}

// Clone returns a deep copy of s.
func (s Spec) Clone() Spec {
	c := s
	c.Command = append([]string(nil), s.Command...)
	if s.Env != nil {
		c.Env = make(map[string]string, len(s.Env))
		for k, v := range s.Env {
			c.Env[k] = v
		}
	}
	c.Options = append(json.RawMessage(nil), s.Options...)
	c.State = append(json.RawMessage(nil), s.State...)
	if s.Overrides != nil {
		c.Overrides = make(map[string]ToolOverride, len(s.Overrides))
		for k, v := range s.Overrides {
			c.Overrides[k] = v.Clone()
		}
	}
	return c
}

// Duration is a time.Duration that reads and writes as a Go duration string
// ("30s") in JSON, and also accepts a number of seconds.
type Duration time.Duration

func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var secs float64
	if err := json.Unmarshal(b, &secs); err == nil {
		*d = Duration(secs * float64(time.Second))
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"30s\" or a number of seconds: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w (use e.g. \"30s\" or \"2m\")", s, err)
	}
	*d = Duration(v)
	return nil
}
