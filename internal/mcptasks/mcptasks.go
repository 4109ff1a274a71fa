// Package mcptasks is the wire of the MCP tasks extension
// (io.modelcontextprotocol/tasks, SEP-2663, 2026-07-28) on the Go SDK's
// extension hooks, which have no tasks of their own: the shapes of a
// task (CreateTaskResult, DetailedTask, the empty acknowledgement), the
// capability a client declares in a request's _meta, the -32021 that
// refuses a client without it, and Register, which serves tasks/get,
// tasks/update and tasks/cancel with mcp.AddReceivingCustomMethod. What a
// task is, how it runs and where it is kept is the server's (Handler);
// a tools/call answered with a task returns a *CreateTaskResult from a
// receiving middleware. It imports only the SDK, so that it can be offered
// upstream as it is (docs/design/upstream/README.md).
package mcptasks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Extension names the extension in capabilities.
const Extension = "io.modelcontextprotocol/tasks"

// Task statuses.
const (
	Working       = "working"
	InputRequired = "input_required"
	Completed     = "completed"
	Failed        = "failed"
	Cancelled     = "cancelled"
)

// Terminal reports whether status is one a task does not leave.
func Terminal(status string) bool {
	return status == Completed || status == Failed || status == Cancelled
}

// Task is the extension's Task: its state, without what the state
// carries.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	// CreatedAt and LastUpdatedAt are ISO 8601 (Time formats them).
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTLMs is how long after its creation the task is kept, in integer
	// milliseconds.
	TTLMs int64 `json:"ttlMs"`
	// PollIntervalMs is the polling interval suggested to the client.
	PollIntervalMs int64 `json:"pollIntervalMs,omitempty"`
}

// Time formats t as a Task's timestamps are.
func Time(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// CreateTaskResult answers a request with a task instead of its result:
// Result & Task, flat, resultType "task".
type CreateTaskResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	Task
}

// NewCreateTaskResult returns t as the answer to the request that made it.
func NewCreateTaskResult(t Task) *CreateTaskResult {
	return &CreateTaskResult{ResultType: "task", Task: t}
}

// DetailedTask is tasks/get's answer: the task and what its status
// carries — the request's result once completed, the JSON-RPC error once
// failed, the open questions while input_required.
type DetailedTask struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	Task
	Result        json.RawMessage     `json:"result,omitempty"`
	Error         *jsonrpc.Error      `json:"error,omitempty"`
	InputRequests mcp.InputRequestMap `json:"inputRequests,omitempty"`
}

// Ack is tasks/update's and tasks/cancel's empty answer.
type Ack struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// IDParams are tasks/get's and tasks/cancel's.
type IDParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

// UpdateParams are tasks/update's.
type UpdateParams struct {
	mcp.ParamsBase
	TaskID         string               `json:"taskId"`
	InputResponses mcp.InputResponseMap `json:"inputResponses"`
}

// Declared reports whether capabilities declare the extension.
func Declared(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[Extension]
	return ok
}

// CapabilitiesOf reads the client capabilities a request's _meta carries
// (2026-07-28), nil without.
func CapabilitiesOf(meta map[string]any) *mcp.ClientCapabilities {
	raw, ok := meta[mcp.MetaKeyClientCapabilities]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var c mcp.ClientCapabilities
	if json.Unmarshal(b, &c) != nil {
		return nil
	}
	return &c
}

// ErrMissingCapability refuses a request that needs the extension to a
// client that did not declare it (-32021, the capability in its data).
func ErrMissingCapability() error {
	data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &mcp.ClientCapabilities{Extensions: map[string]any{Extension: map[string]any{}}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "this needs the client capability " + Extension + " (declare it in _meta." + mcp.MetaKeyClientCapabilities + ".extensions)", Data: data}
}

// ErrUnknown refuses a request for a task the server does not know
// (-32602).
func ErrUnknown(id, why string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no task %q: %s", id, why)}
}

// Handler is the server's tasks, as the three methods reach them. Each
// method returns ErrUnknown for a task it does not know.
type Handler interface {
	// Get returns the task's state now.
	Get(ctx context.Context, id string) (*DetailedTask, error)
	// Update hands the client's answers to the task's open questions;
	// answers to keys not open are ignored.
	Update(ctx context.Context, id string, answers mcp.InputResponseMap) error
	// Cancel asks the task to stop; a task that ended is left as it is.
	Cancel(ctx context.Context, id string) error
}

// Register serves tasks/get, tasks/update and tasks/cancel on server
// with h, for clients that declare the extension on the request (others
// get ErrMissingCapability). The server's capabilities should declare it
// too (Extensions[Extension]); tasks/list and tasks/result, which the
// extension removed, stay unknown methods (-32601).
func Register(server *mcp.Server, h Handler) error {
	gate := func(meta map[string]any) error {
		if !Declared(CapabilitiesOf(meta)) {
			return ErrMissingCapability()
		}
		return nil
	}
	if err := mcp.AddReceivingCustomMethod(server, "tasks/get", func(ctx context.Context, _ *mcp.ServerSession, p *IDParams) (*DetailedTask, error) {
		if err := gate(p.Meta); err != nil {
			return nil, err
		}
		d, err := h.Get(ctx, p.TaskID)
		if err != nil {
			return nil, err
		}
		d.ResultType = "complete"
		return d, nil
	}); err != nil {
		return err
	}
	if err := mcp.AddReceivingCustomMethod(server, "tasks/update", func(ctx context.Context, _ *mcp.ServerSession, p *UpdateParams) (*Ack, error) {
		if err := gate(p.Meta); err != nil {
			return nil, err
		}
		if err := h.Update(ctx, p.TaskID, p.InputResponses); err != nil {
			return nil, err
		}
		return &Ack{ResultType: "complete"}, nil
	}); err != nil {
		return err
	}
	return mcp.AddReceivingCustomMethod(server, "tasks/cancel", func(ctx context.Context, _ *mcp.ServerSession, p *IDParams) (*Ack, error) {
		if err := gate(p.Meta); err != nil {
			return nil, err
		}
		if err := h.Cancel(ctx, p.TaskID); err != nil {
			return nil, err
		}
		return &Ack{ResultType: "complete"}, nil
	})
}
