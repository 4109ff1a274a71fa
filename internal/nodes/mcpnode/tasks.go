package mcpnode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nerve-dev/nerve/internal/mcptasks"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/nerve-dev/nerve/pkg/node"
)

// Tasks: a server may answer a tool call with a task, which nerve polls
// until it ends, and cancels when the call is cancelled (docs/mcp.md,
// "Tasks"). Two shapes exist and nerve speaks both:
//
//   - the extension io.modelcontextprotocol/tasks (SEP-2663, with MCP
//     2026-07-28): nerve declares it; the server decides which calls
//     become tasks and answers those with resultType "task" and the task
//     at the top level; tasks/get returns the task with its result (or
//     error, or the input it waits for, answered with tasks/update);
//     tasks/cancel.
//   - the experimental tasks of MCP 2025-11-25 (the TypeScript SDK's):
//     the client asks for a task by a "task" parameter, which a tool
//     whose execution.taskSupport is "required" needs; the answer is
//     {"task": {...}}; tasks/get polls it and tasks/result returns the
//     result, delivering the server's questions (elicitation, sampling)
//     as requests while it waits; tasks/cancel.
//
// The Go SDK knows neither: it drops what it does not know when it
// decodes a result (a tool's execution, a task). liftResult keeps those
// in _meta, where the SDK keeps everything, before the SDK reads the
// message (tapConn for stdio, the guard for HTTP); the task methods are
// the SDK's custom methods; a v1 tools/call with its "task" parameter is
// sent as a custom method renamed on its way out (taskCallMiddleware).

// TasksExtension is the name of the MCP tasks extension.
const TasksExtension = "io.modelcontextprotocol/tasks"

const (
	// metaTask keeps a task a tools/call was answered with (liftedTask).
	metaTask = "nerve.dev/task"
	// metaExecution keeps a tool's execution object (taskSupport).
	metaExecution = "nerve.dev/execution"
	// methodTaskCall is tools/call with a "task" parameter (v1).
	methodTaskCall = "nerve.dev/tools/call-as-task"
)

// The two shapes of task.
const (
	taskShapeExtension = "extension" // io.modelcontextprotocol/tasks
	taskShapeV1        = "2025-11-25"
)

// Polling: the server's pollInterval, within these bounds.
const (
	defaultTaskPoll = time.Second
	minTaskPoll     = 100 * time.Millisecond
	maxTaskPoll     = 5 * time.Second
	// taskCancelWait bounds the tasks/cancel sent for a cancelled call.
	taskCancelWait = 5 * time.Second
)

// liftedTask is what liftResult keeps of a tools/call answered with a task.
type liftedTask struct {
	Shape string          `json:"shape"`
	Task  json.RawMessage `json:"task"`
}

// liftResult returns the result of a JSON-RPC response with what the SDK
// would drop kept in _meta, and whether it changed anything: a task a
// tools/call was answered with becomes an empty tool result carrying it
// (metaTask), and each tool of a tools/list keeps its execution object
// (metaExecution). Other results are left alone, read only when they
// hold the word.
func liftResult(result []byte) ([]byte, bool) {
	if !bytes.Contains(result, []byte(`"task`)) && !bytes.Contains(result, []byte(`"execution"`)) {
		return nil, false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(result, &obj) != nil {
		return nil, false
	}
	if shape, task := createdTask(obj, result); shape != "" {
		meta := map[string]any{}
		if m, ok := obj["_meta"]; ok {
			_ = json.Unmarshal(m, &meta)
		}
		meta[metaTask] = liftedTask{Shape: shape, Task: task}
		out, err := json.Marshal(map[string]any{"content": []any{}, "_meta": meta})
		return out, err == nil
	}
	tools, ok := obj["tools"]
	if !ok || !bytes.Contains(tools, []byte(`"execution"`)) {
		return nil, false
	}
	var list []map[string]json.RawMessage
	if json.Unmarshal(tools, &list) != nil {
		return nil, false
	}
	changed := false
	for _, t := range list {
		ex, ok := t["execution"]
		if !ok {
			continue
		}
		meta := map[string]json.RawMessage{}
		if m, ok := t["_meta"]; ok && json.Unmarshal(m, &meta) != nil {
			continue
		}
		meta[metaExecution] = ex
		if b, err := json.Marshal(meta); err == nil {
			t["_meta"], changed = b, true
		}
	}
	if !changed {
		return nil, false
	}
	var err error
	if obj["tools"], err = json.Marshal(list); err != nil {
		return nil, false
	}
	out, err := json.Marshal(obj)
	return out, err == nil
}

// createdTask tells a CreateTaskResult of either shape in the result obj
// (whole is its text) and returns the shape and the task.
func createdTask(obj map[string]json.RawMessage, whole []byte) (string, json.RawMessage) {
	var rt string
	if raw, ok := obj["resultType"]; ok {
		_ = json.Unmarshal(raw, &rt)
	}
	if _, ok := obj["taskId"]; ok && rt == "task" {
		return taskShapeExtension, whole
	}
	if raw, ok := obj["task"]; ok && obj["content"] == nil {
		var t struct {
			TaskID string `json:"taskId"`
		}
		if json.Unmarshal(raw, &t) == nil && t.TaskID != "" {
			return taskShapeV1, raw
		}
	}
	return "", nil
}

// liftMessage is liftResult for a whole JSON-RPC message (an HTTP body or
// an SSE event's data): the message to hand on instead, or nil.
func liftMessage(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(`"task`)) && !bytes.Contains(msg, []byte(`"execution"`)) {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return nil
	}
	res, ok := m["result"]
	if !ok {
		return nil
	}
	out, changed := liftResult(res)
	if !changed {
		return nil
	}
	m["result"] = out
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}

// taskOf returns the task res carries (liftResult), if any.
func taskOf(res *mcp.CallToolResult) (*liftedTask, bool) {
	if res == nil || res.Meta == nil {
		return nil, false
	}
	raw, ok := res.Meta[metaTask]
	if !ok {
		return nil, false
	}
	var lt liftedTask
	if remarshal(raw, &lt) != nil || len(lt.Task) == 0 {
		return nil, false
	}
	return &lt, true
}

func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// taskSupport is a tool's execution.taskSupport ("required", "optional",
// "forbidden" or "").
func taskSupport(t *mcp.Tool) string {
	if t == nil || t.Meta == nil {
		return ""
	}
	var ex struct {
		TaskSupport string `json:"taskSupport"`
	}
	if raw, ok := t.Meta[metaExecution]; !ok || remarshal(raw, &ex) != nil {
		return ""
	}
	return ex.TaskSupport
}

// The params of tasks/get, tasks/result and tasks/cancel are
// mcptasks.IDParams (both shapes), tasks/update's mcptasks.UpdateParams.

// taskCallParams are a tools/call asking for a task (v1).
type taskCallParams struct {
	mcp.ParamsBase
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Task      struct{}        `json:"task"`
}

// task is a task as either shape tells it: a CreateTaskResult, tasks/get,
// tasks/cancel (v1).
type task struct {
	mcp.ResultBase
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	// PollIntervalMs (extension) or PollInterval (v1), milliseconds.
	PollIntervalMs float64 `json:"pollIntervalMs,omitempty"`
	PollInterval   float64 `json:"pollInterval,omitempty"`
	// The extension's tasks/get carries the outcome.
	Result        *mcp.CallToolResult `json:"result,omitempty"`
	Error         *taskError          `json:"error,omitempty"`
	InputRequests mcp.InputRequestMap `json:"inputRequests,omitempty"`
}

type taskError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// ack is the empty answer of tasks/update and of the extension's tasks/cancel.
type ack struct{ mcp.ResultBase }

func (t *task) poll() time.Duration {
	ms := t.PollIntervalMs
	if ms == 0 {
		ms = t.PollInterval
	}
	if ms <= 0 {
		return defaultTaskPoll
	}
	return min(max(time.Duration(ms*float64(time.Millisecond)), minTaskPoll), maxTaskPoll)
}

// registerTaskMethods lets client send the task methods.
func registerTaskMethods(client *mcp.Client) {
	// The errors are for a name of a standard method, which these are not.
	_ = mcp.AddSendingCustomMethod[*mcptasks.IDParams, *task](client, "tasks/get")
	_ = mcp.AddSendingCustomMethod[*mcptasks.IDParams, *mcp.CallToolResult](client, "tasks/result")
	_ = mcp.AddSendingCustomMethod[*mcptasks.UpdateParams, *ack](client, "tasks/update")
	_ = mcp.AddSendingCustomMethod[*mcptasks.IDParams, *task](client, "tasks/cancel")
	_ = mcp.AddSendingCustomMethod[*taskCallParams, *mcp.CallToolResult](client, methodTaskCall)
}

// taskCallMiddleware sends methodTaskCall as tools/call: the SDK lets a
// client send only its own params type under a standard method's name,
// and a v1 task call needs a "task" parameter it does not have.
func taskCallMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == methodTaskCall {
			method = "tools/call"
		}
		return next(ctx, method, req)
	}
}

// nameKey carries the Mcp-Name header of a request the SDK sends none
// for: tasks/get, tasks/update and tasks/cancel name their task
// (SEP-2663, routing headers); headerTransport sets it.
type nameKey struct{}

// callTaskV1 calls a tool that needs a v1 task.
func callTaskV1(ctx context.Context, cs *mcp.ClientSession, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	tp := &taskCallParams{Name: p.Name}
	tp.Meta = p.Meta
	if args, ok := p.Arguments.(json.RawMessage); ok && len(args) > 0 {
		tp.Arguments = args
	} else {
		tp.Arguments = json.RawMessage("{}")
	}
	return mcp.CallCustomMethod[*taskCallParams, *mcp.CallToolResult](ctx, cs, methodTaskCall, tp)
}

// awaitTask follows the task lt that the call cl was answered with until
// it ends, and returns its result. Each answer of the server keeps the
// call alive (as progress does); a change of status is reported to the
// caller as progress. When cctx ends (Ctrl-C, the node's timeout, the
// cap) the server is sent tasks/cancel.
func (n *Node) awaitTask(ctx, cctx context.Context, c *conn, cl *call, lt *liftedTask) (*mcp.CallToolResult, error) {
	tool := cl.req.Tool
	var t task
	if err := json.Unmarshal(lt.Task, &t); err != nil || t.TaskID == "" {
		return nil, fmt.Errorf("tool %q on node %q: the server answered with a task nerve cannot read: %v", tool, n.ID(), err)
	}
	id := t.TaskID
	n.log.Info("the server runs the call as a task", zap.String("tool", tool), zap.String("task", id), zap.String("shape", lt.Shape))
	seen := ""
	report := func() {
		what := t.Status
		if t.StatusMessage != "" {
			what += ": " + t.StatusMessage
		}
		if what != seen {
			seen = what
			cl.req.Emit(node.CallEvent{Kind: node.EventProgress, Message: "task " + id + " " + what})
		}
	}
	report()
	get := func() error {
		next, err := mcp.CallCustomMethod[*mcptasks.IDParams, *task](context.WithValue(cctx, nameKey{}, id), c.cs, "tasks/get", &mcptasks.IDParams{TaskID: id})
		if err != nil {
			return err
		}
		t = *next
		cl.alive()
		report()
		return nil
	}
	answered := map[string]bool{}
	for {
		var err error
		switch {
		case lt.Shape == taskShapeV1 && (t.Status == "input_required" || t.Status == "completed" || t.Status == "failed"):
			// tasks/result waits for the end, delivering the server's
			// questions as requests meanwhile (answered as any others).
			var res *mcp.CallToolResult
			res, err = mcp.CallCustomMethod[*mcptasks.IDParams, *mcp.CallToolResult](cctx, c.cs, "tasks/result", &mcptasks.IDParams{TaskID: id})
			if err == nil {
				return res, nil
			}
		case t.Status == "completed" && t.Result != nil:
			return t.Result, nil
		case t.Status == "completed":
			// The extension inlines the result on tasks/get (the task
			// the call was answered with may have ended already).
			if err = get(); err == nil && t.Result == nil {
				return nil, fmt.Errorf("tool %q on node %q: task %s completed without a result", tool, n.ID(), id)
			}
		case t.Status == "failed":
			msg := "no reason given"
			if t.Error != nil {
				msg = fmt.Sprintf("%s (code %d)", t.Error.Message, t.Error.Code)
			} else if t.StatusMessage != "" {
				msg = t.StatusMessage
			}
			return nil, fmt.Errorf("tool %q on node %q: task %s failed: %s", tool, n.ID(), id, msg)
		case t.Status == "cancelled":
			return nil, fmt.Errorf("tool %q on node %q: task %s was cancelled by the server", tool, n.ID(), id)
		case t.Status == "input_required" && len(pending(t.InputRequests, answered)) > 0:
			// Each question once: a server may list an answered one until
			// it has read the answer.
			reqs := pending(t.InputRequests, answered)
			if err = n.answerTask(cctx, c, id, reqs); err == nil {
				for k := range reqs {
					answered[k] = true
				}
				err = get()
			}
		default:
			select {
			case <-cctx.Done():
				err = cctx.Err()
			case <-time.After(t.poll()):
				err = get()
			}
		}
		if err == nil {
			continue
		}
		if cctx.Err() != nil {
			n.cancelTask(ctx, c, id)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("call to %q cancelled (the server was told, task %s): %w", tool, id, context.Cause(ctx))
			}
			return nil, fmt.Errorf("%w (task %s cancelled)", context.Cause(cctx), id)
		}
		return nil, fmt.Errorf("tool %q on node %q: following task %s: %w", tool, n.ID(), id, err)
	}
}

// pending is reqs without those answered.
func pending(reqs mcp.InputRequestMap, answered map[string]bool) mcp.InputRequestMap {
	out := mcp.InputRequestMap{}
	for k, r := range reqs {
		if !answered[k] {
			out[k] = r
		}
	}
	return out
}

// answerTask answers the questions a task of the extension waits for, as
// the server would have asked them in the middle of a call, and sends
// the answers with tasks/update.
func (n *Node) answerTask(ctx context.Context, c *conn, id string, reqs mcp.InputRequestMap) error {
	answers, err := n.fulfill(ctx, c, reqs)
	if err != nil {
		return err
	}
	_, err = mcp.CallCustomMethod[*mcptasks.UpdateParams, *ack](context.WithValue(ctx, nameKey{}, id), c.cs, "tasks/update",
		&mcptasks.UpdateParams{TaskID: id, InputResponses: answers})
	return err
}

// fulfill answers input requests one after another (a person answers one
// question at a time) with the node's elicitation and sampling hooks.
func (n *Node) fulfill(ctx context.Context, c *conn, reqs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	ids := make([]string, 0, len(reqs))
	for id := range reqs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make(mcp.InputResponseMap, len(reqs))
	for _, id := range ids {
		switch p := reqs[id].(type) {
		case *mcp.ElicitParams:
			res, err := n.elicit(ctx, c, p)
			if err != nil {
				return nil, err
			}
			out[id] = res
		case *mcp.CreateMessageWithToolsParams:
			res, err := n.sample(ctx, c, baseSampling(p))
			if err != nil {
				return nil, err
			}
			out[id] = res
		case *mcp.CreateMessageParams:
			res, err := n.sample(ctx, c, p)
			if err != nil {
				return nil, err
			}
			out[id] = res
		case *mcp.ListRootsParams:
			roots, err := n.rootList()
			if err != nil {
				return nil, err
			}
			out[id] = &mcp.ListRootsResult{Roots: roots}
		default:
			return nil, fmt.Errorf("the server asked for input nerve does not know (%T)", p)
		}
	}
	return out, nil
}

// baseSampling is a sampling request with tools as the hooks take it:
// one message per content block.
func baseSampling(p *mcp.CreateMessageWithToolsParams) *mcp.CreateMessageParams {
	b := &mcp.CreateMessageParams{Meta: p.Meta, IncludeContext: p.IncludeContext, MaxTokens: p.MaxTokens, Metadata: p.Metadata,
		ModelPreferences: p.ModelPreferences, StopSequences: p.StopSequences, SystemPrompt: p.SystemPrompt, Temperature: p.Temperature}
	for _, m := range p.Messages {
		for _, ct := range m.Content {
			b.Messages = append(b.Messages, &mcp.SamplingMessage{Role: m.Role, Content: ct})
		}
	}
	return b
}

// cancelTask tells the server to cancel task id, bounded, on a context
// that outlives the call's.
func (n *Node) cancelTask(ctx context.Context, c *conn, id string) {
	cctx, cancel := context.WithTimeout(context.WithValue(context.WithoutCancel(ctx), nameKey{}, id), taskCancelWait)
	defer cancel()
	// v1 answers with the task, the extension with an empty ack: both
	// read as a task.
	if _, err := mcp.CallCustomMethod[*mcptasks.IDParams, *task](cctx, c.cs, "tasks/cancel", &mcptasks.IDParams{TaskID: id}); err != nil {
		n.log.Info("cancelling the task", zap.String("task", id), zap.Error(err))
	}
}
