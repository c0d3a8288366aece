// Package adapterapi is the local HTTP adapter contract V1 (seed 000) between
// a2a-runtime and a local adapter: the POST /run-task request, the three
// response shapes, artifact write requests, and GET /health. Both sides import
// it, so the contract is written down once.
package adapterapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// Default local endpoint of the official runtime (seed 000).
const DefaultEndpoint = "http://localhost:18789/run-task"

// Platform identifies where a task came from. It is not a credential and not an
// API base (seed 000 "Platform origin field").
type Platform struct {
	Name   string `json:"name"`
	Origin string `json:"origin"`
}

// RunTaskRequest is the body of POST /run-task. It never carries the runtime
// token or the platform API base.
type RunTaskRequest struct {
	TaskRunID        string          `json:"task_run_id"`
	ConversationID   string          `json:"conversation_id"`
	WorkspaceID      string          `json:"workspace_id"`
	TaskType         string          `json:"task_type"`
	Input            json.RawMessage `json:"input"`
	InitiatorAgentID string          `json:"initiator_agent_id"`
	TargetAgentID    string          `json:"target_agent_id"`
	Platform         Platform        `json:"platform"`
	// Instructions are the agent account's business instructions, when it has
	// any (seed 001 §2.6); adapters hand them to the host as a system prompt.
	// Old adapters ignore the field.
	Instructions string `json:"instructions,omitempty"`
	// Environment is what the task's caller asked the host's process to
	// run with (the envelope protocol's workingDirectory and
	// environmentVariables). Variables may hold secrets: an adapter sets
	// them in the host's environment only, never logs them and never
	// writes them to files. Old adapters ignore the field.
	Environment *Environment `json:"environment,omitempty"`
	// Tools is a tool server the runtime serves for this run (the mesh's
	// delegation tools). Its capability is a secret: an adapter puts it
	// only in the host's tool configuration, never in logs, arguments or
	// the task JSON it hands the host. Old adapters ignore the field.
	Tools *Tools `json:"tools,omitempty"`
	// Budget is what the run may still spend under its agent's per-run
	// budget. A host that can stop itself at a limit is given it (Claude
	// Code: --max-budget-usd); the platform cancels the run anyway once
	// its reported usage passes the budget. Old adapters ignore the field.
	Budget *Budget `json:"budget,omitempty"`
}

// Budget is a bound on a run's spending: tokens (input plus output), cost
// in US dollars, or both; 0 is no bound.
type Budget struct {
	Tokens  int64   `json:"tokens,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
}

// Tools is a Model Context Protocol server (streamable HTTP, on loopback)
// for one run, valid while the run runs.
type Tools struct {
	// MCPURL is the server's endpoint.
	MCPURL string `json:"mcp_url"`
	// Capability is the bearer token of the run's tools.
	Capability string `json:"capability"`
	// FolderHeader names the header that tells the server the run's
	// folder (files are read from and saved into it).
	FolderHeader string `json:"folder_header,omitempty"`
}

// How long hosts wait for the mesh's tools (Tools). Hosts have defaults
// of their own, shorter than the tools need, so the adapter tells each
// host these.
const (
	// ToolWaitLimit bounds one call of the mesh's tools that waits for
	// another agent's answer (send_task or get_task with wait): the tool
	// server ends the wait then.
	ToolWaitLimit = 30 * time.Minute
	// ToolCallTimeout is how long a host waits for one call of the mesh's
	// tools: ToolWaitLimit, and the platform request under way when it
	// ends.
	ToolCallTimeout = ToolWaitLimit + time.Minute
	// ToolStartupTimeout is how long a host waits for the tool server's
	// handshake before it runs the task without the mesh's tools. The
	// server is on loopback; a loaded machine can still take seconds.
	ToolStartupTimeout = 30 * time.Second
)

// Environment is a task's host environment. The platform refuses variables
// named A2A_* (its own), PATH and HOME; adapters skip them too.
type Environment struct {
	// WorkingDirectory is the directory the caller named. The conversation's
	// directory stays the host's working directory (the context boundary);
	// the command provider passes this one as A2A_WORKING_DIRECTORY.
	WorkingDirectory string            `json:"working_directory,omitempty"`
	Variables        map[string]string `json:"variables,omitempty"`
}

// InputText returns input.text, or "" when the input has none.
func (r *RunTaskRequest) InputText() string { return mesh.InputText(r.Input) }

// ArtifactWrite is one artifact write request an adapter returns in
// output.artifacts (alias output.artifact_writes). The runtime materialises it
// with its own credential; the adapter never calls the platform.
type ArtifactWrite struct {
	ArtifactType string   `json:"artifact_type,omitempty"`
	Filename     string   `json:"filename"`
	Title        string   `json:"title,omitempty"`
	Summary      string   `json:"summary,omitempty"`
	Keywords     []string `json:"keywords,omitempty"`
	MimeType     string   `json:"mime_type,omitempty"`
	// ContentText is the whole file body as text.
	ContentText string `json:"content_text,omitempty"`
	// ContentBase64 carries a binary body (an extension of V1; text adapters
	// keep using content_text).
	ContentBase64 string `json:"content_base64,omitempty"`
}

// SuccessResponse is the preferred explicit success envelope.
type SuccessResponse struct {
	Success bool           `json:"success"`
	Output  map[string]any `json:"output"`
}

// FailureResponse is the explicit failure shape. Code and Usage are
// additions to V1: a failure's reason code (CodeBudgetExceeded), and what
// the host reported spending before it failed (the shape of a success's
// output.usage).
type FailureResponse struct {
	Success bool   `json:"success"`
	Error   string `json:"error"`
	Code    string `json:"code,omitempty"`
	Usage   any    `json:"usage,omitempty"`
}

// CodeBudgetExceeded is the failure code of a host that stopped itself at
// the run's Budget; the runtime fails the run with it (the platform's
// reason BUDGET_EXCEEDED) and counts the failure's usage.
const CodeBudgetExceeded = mesh.ReasonBudgetExceeded

// Health is the body of GET /health.
type Health struct {
	OK       bool   `json:"ok"`
	Provider string `json:"provider,omitempty"`
	Busy     bool   `json:"busy"`
	// KeepAlive allows the runtime to keep connections to the adapter
	// alive between tasks. An adapter says so only if it sends its
	// answer's headers (a streaming 200) as soon as it takes a task: a kept
	// connection that breaks before any answer then carried no task it
	// took, and the runtime sends the task again on a fresh connection.
	KeepAlive bool `json:"keep_alive,omitempty"`
}

// Kind classifies an adapter reply.
type Kind int

// Reply kinds (seed 000 "Successful Response" / "Failed Response").
const (
	KindSuccess Kind = iota + 1 // {"success": true, "output": {...}}
	KindLegacy                  // any other JSON object: the whole object is the output
	KindFailure                 // {"success": false, "error": "..."}
)

// Reply is a classified adapter reply.
type Reply struct {
	Kind Kind
	// Output is what the runtime completes the run with (success and legacy).
	Output map[string]any
	// Error is the failure reason (failure).
	Error string
	// Code and Usage are a failure's code and usage, when it has them.
	Code  string
	Usage json.RawMessage
}

// Errors for replies the runtime must fail the run on.
var (
	ErrNotJSON   = errors.New("adapter reply is not JSON")
	ErrNotObject = errors.New("adapter reply is not a JSON object")
)

// ParseReply classifies a 2xx reply body. A body with "success": true must
// carry an object "output"; "success": false is a failure whatever else it has.
func ParseReply(body []byte) (*Reply, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if !json.Valid(trimmed) {
			return nil, ErrNotJSON
		}
		return nil, ErrNotObject
	}
	// Decoding checks the whole text first: a syntax error is text that
	// is not JSON, and a JSON object always decodes.
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return nil, ErrNotJSON
		}
		return nil, ErrNotObject
	}
	rawSuccess, hasSuccess := obj["success"]
	var success bool
	if hasSuccess && json.Unmarshal(rawSuccess, &success) != nil {
		// "success" that is not a boolean is not the envelope: legacy output.
		hasSuccess = false
	}
	switch {
	case hasSuccess && !success:
		r := &Reply{Kind: KindFailure, Error: failureText(obj["error"])}
		_ = json.Unmarshal(obj["code"], &r.Code)
		if u := obj["usage"]; len(u) > 0 && u[0] == '{' {
			r.Usage = u
		}
		return r, nil
	case hasSuccess && success:
		var out map[string]any
		if raw, ok := obj["output"]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &out); err != nil {
				return nil, fmt.Errorf("adapter success envelope: output is not an object")
			}
		}
		if out == nil {
			out = map[string]any{}
		}
		return &Reply{Kind: KindSuccess, Output: out}, nil
	}
	var out map[string]any
	_ = json.Unmarshal(trimmed, &out)
	return &Reply{Kind: KindLegacy, Output: out}, nil
}

// failureText turns the failure "error" field into text: a string as is, an
// object's "message", anything else as JSON.
func failureText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "adapter reported failure without a reason"
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	return string(raw)
}

// ArtifactWrites extracts output.artifacts and output.artifact_writes.
func ArtifactWrites(output map[string]any) ([]ArtifactWrite, error) {
	var all []ArtifactWrite
	for _, key := range []string{"artifacts", "artifact_writes"} {
		raw, ok := output[key]
		if !ok || raw == nil {
			continue
		}
		b, err := json.Marshal(raw)
		if err != nil {
			return nil, err
		}
		var writes []ArtifactWrite
		if err := json.Unmarshal(b, &writes); err != nil {
			return nil, fmt.Errorf("output.%s is not a list of artifact write requests: %w", key, err)
		}
		all = append(all, writes...)
	}
	return all, nil
}

// Streaming replies (an extension of V1, compatible with plain adapters): a
// runtime that sends "Accept: application/x-ndjson" may get a 200 response of
// newline-delimited JSON objects: any number of progress lines, then exactly
// one result line whose "result" is one of the reply shapes above. An adapter
// that ignores Accept answers plain JSON, which the runtime also accepts.
const MediaNDJSON = "application/x-ndjson"

// Stream line types.
const (
	LineProgress = "progress"
	LineResult   = "result"
)

// StreamLine is one line of a streaming reply.
type StreamLine struct {
	Type string `json:"type"`
	// Message and Percent are set on progress lines.
	Message string   `json:"message,omitempty"`
	Percent *float64 `json:"percent,omitempty"`
	// Result is set on the result line: a success, legacy or failure reply.
	Result json.RawMessage `json:"result,omitempty"`
}

// Attachment is a file given to the agent with a task's input, in
// input.attachments (an addition to V1 for A2A file parts). The platform
// stores an uploaded file and names it by ArtifactID; the runtime fetches it
// with its own credential and passes the bytes inline as ContentBase64, so
// the adapter never calls the platform. A file the caller left elsewhere
// comes as URI only.
type Attachment struct {
	Name          string `json:"name,omitempty"`
	MimeType      string `json:"mime_type,omitempty"`
	Size          int64  `json:"size,omitempty"`
	ArtifactID    string `json:"artifact_id,omitempty"`
	URI           string `json:"uri,omitempty"`
	ContentBase64 string `json:"content_base64,omitempty"`
}

// InputRequiredKey is the output field with which an adapter ends a turn
// asking the caller for more input (the question goes in output.text):
// {"success": true, "output": {"text": "Which city?", "input_required": true}}.
// The run then waits in input-required, and the caller's answer comes back
// as a new turn of the same task run, with the earlier turns in input.history.
const InputRequiredKey = "input_required"

// HistoryTurn is one earlier turn of a continued task, in input.history, so
// an adapter without memory of its own sees the conversation so far.
type HistoryTurn struct {
	// Role is "user" or "agent".
	Role string `json:"role"`
	Text string `json:"text"`
}

// Message is the A2A message a task's input was made from, in
// input.message (an addition to V1 for tasks that come through the A2A
// endpoint): its id, its role and its parts of every kind, in order. Its
// text and data are also in input.text and input.data, and its files in
// input.attachments, so an adapter that reads only those keeps working.
type Message struct {
	MessageID string `json:"message_id"`
	// Role is "user" (a message to the agent) or "agent".
	Role  string `json:"role"`
	Parts []Part `json:"parts,omitempty"`
}

// Part kinds of Message.Parts and of output.parts.
const (
	PartText = "text"
	PartData = "data"
	PartFile = "file"
)

// Part is one part of a Message, or one part of an adapter's output in
// output.parts. A text part has Text; a data part has Data (any JSON); a
// file part has Name and MimeType and either URI (a file the caller left at
// a URL: nobody on the platform fetches it, the agent does if it wants it)
// or ArtifactID (a file sent inline, stored by the platform, whose bytes
// arrive in the input.attachments entry of the same artifact_id).
type Part struct {
	Kind       string `json:"kind"`
	Text       string `json:"text,omitempty"`
	Data       any    `json:"data,omitempty"`
	Name       string `json:"name,omitempty"`
	MimeType   string `json:"mime_type,omitempty"`
	URI        string `json:"uri,omitempty"`
	ArtifactID string `json:"artifact_id,omitempty"`
}

// InputMessage returns input.message, or nil when the input has none (a
// task that did not come through the A2A endpoint).
func (r *RunTaskRequest) InputMessage() *Message {
	var in struct {
		Text    string   `json:"text"`
		Message *Message `json:"message"`
	}
	_ = json.Unmarshal(r.Input, &in)
	if in.Message != nil && len(in.Message.Parts) == 0 {
		in.Message.Parts = []Part{{Kind: PartText, Text: in.Text}}
	}
	return in.Message
}

// Compact drops the parts of a message whose only part is text: that text
// is input.text already, and a run's input (kept in its record, its events
// and every bus message that carries it) would otherwise carry it twice.
// InputMessage gives the part back to the adapter.
func (m *Message) Compact() {
	if len(m.Parts) == 1 && m.Parts[0].Kind == PartText {
		m.Parts = nil
	}
}

// Output fields (additions to V1) with which an adapter shapes the A2A
// answer of a task:
//
//   - PartsKey: a list of Part (kind "text", "data", or "file" with a uri)
//     that join output.text and output.data in the task's result;
//   - ReplyKey with ReplyMessage: the answer to a blocking A2A send is a
//     message of the agent holding the result, instead of a task (a
//     one-shot answer);
//   - RejectedKey: the agent declines the task (the reason in output.text):
//     the run fails with mesh.ReasonRejected, which A2A calls rejected.
const (
	PartsKey     = "parts"
	ReplyKey     = "reply"
	ReplyMessage = "message"
	RejectedKey  = "rejected"
)

// Rejected reports whether an adapter's output declines the task, and the
// reason it gives.
func Rejected(output map[string]any) (bool, string) {
	if v, _ := output[RejectedKey].(bool); !v {
		return false, ""
	}
	reason, _ := output["text"].(string)
	if reason == "" {
		reason = "the agent declined the task"
	}
	return true, reason
}
