package meshapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
)

// Task-run operations for people and front ends (service "taskqueue").
const (
	OpTaskCreate         = "create"
	OpTaskGet            = "get"
	OpTaskList           = "list"
	OpTaskCancel         = "cancel"
	OpTaskContinue       = "continue"
	OpTaskAttachArtifact = "attach_artifact"
	OpConversationCreate = "conversation_create"
	OpConversationGet    = "conversation_get"
	// OpUsage answers what agents' runs spent, per agent and day.
	OpUsage = "usage"
)

// Limits on task-run creation.
const (
	MaxAttemptsLimit = 10
	DefaultListLimit = 50
	MaxListLimit     = 500
)

// CreateTaskRunRequest creates a task run for an agent.
type CreateTaskRunRequest struct {
	TargetAgentID string          `json:"target_agent_id"`
	Input         json.RawMessage `json:"input"`
	// ConversationID continues a conversation; empty starts a new one.
	ConversationID   string `json:"conversation_id,omitempty"`
	TaskType         string `json:"task_type,omitempty"`
	InitiatorAgentID string `json:"initiator_agent_id,omitempty"`
	// IdempotencyKey makes a repeated create return the first run.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// MaxAttempts is how many claims a run may have when leases expire.
	// Default 1: a lost runtime fails the run with RUNTIME_LOST.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Deadline bounds the run; TimeoutSeconds is the same relative to now.
	Deadline       *time.Time `json:"deadline,omitempty"`
	TimeoutSeconds int64      `json:"timeout_seconds,omitempty"`
	// Metadata is free-form caller data; metadata.skill_id names the skill
	// the task asks for, which routing rules may match on.
	Metadata map[string]any `json:"metadata,omitempty"`
	// ParentTaskRunID and DelegationChain are set by the A2A endpoint for a
	// task the platform delegated (from the claims of its platform-signed
	// token, which only the platform can make).
	ParentTaskRunID string   `json:"parent_task_run_id,omitempty"`
	DelegationChain []string `json:"delegation_chain,omitempty"`
	// Environment is handed to the agent host's process (the envelope
	// protocol); see mesh.TaskRun.Environment.
	Environment *mesh.HostEnvironment `json:"environment,omitempty"`
}

// SkillKey is the metadata field naming the skill a task asks for.
const SkillKey = "skill_id"

// CreateTaskRunResponse is the run; Created is false when an idempotency key
// returned an existing run.
type CreateTaskRunResponse struct {
	TaskRun mesh.TaskRun `json:"task_run"`
	Created bool         `json:"created"`
}

// GetTaskRunRequest names a run.
type GetTaskRunRequest struct {
	TaskRunID string `json:"task_run_id"`
}

// ListTaskRunsRequest filters and pages runs, newest first.
type ListTaskRunsRequest struct {
	AgentID string `json:"agent_id,omitempty"`
	// ConversationID keeps the runs of one conversation.
	ConversationID string      `json:"conversation_id,omitempty"`
	Status         mesh.Status `json:"status,omitempty"`
	Limit          int         `json:"limit,omitempty"`
	// Cursor continues after the last run of the previous page.
	Cursor string `json:"cursor,omitempty"`
	// Offset skips matches instead of a cursor (the seed 002 executions API).
	Offset int `json:"offset,omitempty"`
	// WithTotal counts every match (costs a full scan).
	WithTotal bool `json:"with_total,omitempty"`
}

// TaskRunList is one page of runs.
type TaskRunList struct {
	TaskRuns   []mesh.TaskRun `json:"task_runs"`
	NextCursor string         `json:"next_cursor,omitempty"`
	Total      *int           `json:"total,omitempty"`
	// UnreachableRegions names the regions that could not be asked for a
	// list of every agent's runs: their runs are missing from it (and
	// from Total).
	UnreachableRegions []string `json:"unreachable_regions,omitempty"`
}

// CancelTaskRunRequest cancels a pending or running run.
type CancelTaskRunRequest struct {
	TaskRunID string `json:"task_run_id"`
	Reason    string `json:"reason,omitempty"`
}

// ContinueTaskRunRequest answers a run waiting in input-required: the run
// goes back to pending with Input as its new turn's input and is queued for
// its agent's runtime again.
type ContinueTaskRunRequest struct {
	TaskRunID string          `json:"task_run_id"`
	Input     json.RawMessage `json:"input"`
}

// InputAnswer is the body of OpTaskRunsContinue's route (POST
// /task-runs/{taskRunId}/input): a person's answer to a run waiting for
// input, as text or as the next turn's whole input, one of the two.
type InputAnswer struct {
	Text  *string         `json:"text,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

// AttachArtifactRequest records an artifact on the run a runtime is working on.
type AttachArtifactRequest struct {
	TaskRunID string           `json:"task_run_id"`
	AgentID   string           `json:"agent_id"`
	RuntimeID string           `json:"runtime_id"`
	Attempt   int              `json:"attempt,omitempty"`
	Artifact  mesh.ArtifactRef `json:"artifact"`
}

// CreateConversationRequest starts a conversation and its workspace.
type CreateConversationRequest struct {
	Metadata map[string]any `json:"metadata,omitempty"`
}

// GetConversationRequest names a conversation.
type GetConversationRequest struct {
	ConversationID string `json:"conversation_id"`
}

// CreateTaskRun creates a task run. A create with an idempotency key is
// sent again (every TryTimeout) while no copy of the task queue answers in
// time, or none is reachable: the copy that took it may have been lost with
// its node, and another answers the next send with the run the first
// stored, if it did, or creates it; the key never makes two. If the
// caller's time runs out that way, the answer is UNAVAILABLE (the endpoints'
// 503 with Retry-After): sending the create again with the same key is
// safe. A create without a key is sent once.
func (c *Client) CreateTaskRun(ctx context.Context, req CreateTaskRunRequest) (*CreateTaskRunResponse, error) {
	if req.IdempotencyKey == "" {
		return Send(ctx, c, OpTaskRunsCreate, req)
	}
	var r CreateTaskRunResponse
	err := bus.CallIdempotent(ctx, c.nc, bus.ServiceSubject(OpTaskRunsCreate.Service, OpTaskRunsCreate.Name), req, &r, TryTimeout)
	if errors.Is(err, mesh.ErrTimeout) {
		return nil, fmt.Errorf("%w: %w", mesh.Errorf(mesh.CodeUnavailable, "the task queue did not answer in time (a node may have been lost); send the create again with the same idempotency_key"), err)
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// GetTaskRun returns a task run.
func (c *Client) GetTaskRun(ctx context.Context, taskRunID string) (*mesh.TaskRun, error) {
	return runOf(Send(ctx, c, OpTaskRunsGet, GetTaskRunRequest{TaskRunID: taskRunID}))
}

// ListTaskRuns pages task runs, newest first.
func (c *Client) ListTaskRuns(ctx context.Context, req ListTaskRunsRequest) (*TaskRunList, error) {
	return Send(ctx, c, OpTaskRunsList, req)
}

// CancelTaskRun cancels a task run.
func (c *Client) CancelTaskRun(ctx context.Context, req CancelTaskRunRequest) (*mesh.TaskRun, error) {
	return runOf(Send(ctx, c, OpTaskRunsCancel, req))
}

// AttachArtifact records an artifact on a running run.
func (c *Client) AttachArtifact(ctx context.Context, req AttachArtifactRequest) (*mesh.TaskRun, error) {
	return runOf(Send(ctx, c, OpTaskRunsAttachArtifact, req))
}

// CreateConversation starts a conversation and its workspace.
func (c *Client) CreateConversation(ctx context.Context, req CreateConversationRequest) (*mesh.Conversation, error) {
	return Send(ctx, c, OpConversationsCreate, req)
}

// GetConversation returns a conversation.
func (c *Client) GetConversation(ctx context.Context, conversationID string) (*mesh.Conversation, error) {
	return Send(ctx, c, OpConversationsGet, GetConversationRequest{ConversationID: conversationID})
}

// ContinueTaskRun answers a run waiting for input with its next turn's input.
func (c *Client) ContinueTaskRun(ctx context.Context, req ContinueTaskRunRequest) (*mesh.TaskRun, error) {
	return runOf(Send(ctx, c, OpTaskRunsContinue, req))
}

// UsageRequest asks what agents' runs spent, per agent and UTC day
// (docs/usage.md). Without AgentID: every agent of the region that answers.
type UsageRequest struct {
	AgentID string `json:"agent_id,omitempty"`
	// From and To bound the days, inclusive (YYYY-MM-DD); empty is open.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// UsageReport is what the runs spent: one entry per agent and day, oldest
// day first, and their sum.
type UsageReport struct {
	Days  []mesh.UsageTotal `json:"days"`
	Total mesh.Usage        `json:"total"`
}

// OpUsageReport is the task queue's report of what runs spent, for the
// owner; its filters are the route's query.
var OpUsageReport = define[UsageRequest, UsageReport](OpInfo{Name: OpUsage, Service: bus.ServiceTaskQueue, Caller: CallerOwner, Idempotent: true,
	REST: query(get("/usage", nil), map[string]string{"agent_id": "agent_id", "from": "from", "to": "to"})})

// Usage returns what agents' runs spent, per agent and day.
func (c *Client) Usage(ctx context.Context, req UsageRequest) (*UsageReport, error) {
	return Send(ctx, c, OpUsageReport, req)
}
