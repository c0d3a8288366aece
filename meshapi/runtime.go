package meshapi

import (
	"encoding/json"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// Runtime operations arrive on bus.RuntimeSubject(agent, runtime, op); the
// subject names the runtime, so bodies do not.

// HelloResponse tells a runtime how to work: its queue consumer and timings.
type HelloResponse struct {
	AgentID   string `json:"agent_id"`
	RuntimeID string `json:"runtime_id"`
	Stream    string `json:"stream"`
	Consumer  string `json:"consumer"`
	// JSAPIPrefix is the JetStream API prefix to reach the consumer with.
	JSAPIPrefix        string `json:"js_api_prefix"`
	LeaseMS            int64  `json:"lease_ms"`
	HeartbeatTimeoutMS int64  `json:"heartbeat_timeout_ms"`
	// Instructions are the agent account's business instructions.
	Instructions string `json:"instructions,omitempty"`
}

// PullRequest claims the next pending run, waiting up to Wait for one.
type PullRequest struct {
	Wait time.Duration `json:"wait,omitempty"`
}

// PullResponse holds the claimed run, or nothing when none was pending.
type PullResponse struct {
	TaskRun *mesh.TaskRun `json:"task_run,omitempty"`
}

// QueueMessage is the body of a pending-queue message.
type QueueMessage struct {
	TaskRunID string `json:"task_run_id"`
	// Attempt is the attempt number a claim of this message starts.
	Attempt int `json:"attempt"`
}

// ClaimRequest claims the run of a queue message the runtime fetched.
type ClaimRequest struct {
	TaskRunID string `json:"task_run_id"`
	Attempt   int    `json:"attempt"`
}

// ReleaseRequest gives back a claimed run that never reached the adapter
// (its claim reply could not be delivered); the attempt does not count.
type ReleaseRequest struct {
	TaskRunID string `json:"task_run_id"`
	Attempt   int    `json:"attempt"`
}

// RenewRequest extends the leases of runs the runtime is working on.
type RenewRequest struct {
	TaskRunIDs []string `json:"task_run_ids"`
	// Attempt, when given, is the attempt the runtime holds of every run
	// named: a lease of another attempt is not renewed (reported lost).
	Attempt int `json:"attempt,omitempty"`
}

// RenewResponse lists which leases were renewed and which runs are no longer
// the runtime's (canceled, reaped, or ended): it should stop working on those.
type RenewResponse struct {
	Renewed []string `json:"renewed"`
	Lost    []string `json:"lost,omitempty"`
	// LeaseExpiresAt is the new expiry of the renewed leases.
	LeaseExpiresAt time.Time `json:"lease_expires_at"`
}

// ProgressRequest reports progress on a run (seed 001 §4.4); it renews the lease.
type ProgressRequest struct {
	TaskRunID string   `json:"task_run_id"`
	Attempt   int      `json:"attempt,omitempty"`
	Message   string   `json:"message,omitempty"`
	Percent   *float64 `json:"percent,omitempty"`
}

// CompleteRequest ends a run's turn with its output.
type CompleteRequest struct {
	TaskRunID string          `json:"task_run_id"`
	Attempt   int             `json:"attempt,omitempty"`
	Output    json.RawMessage `json:"output"`
	// InputRequired ends the turn asking the caller for more input (the
	// question is in output.text): the run moves to input-required instead
	// of completed, and a caller's answer continues it (OpTaskContinue).
	InputRequired bool `json:"input_required,omitempty"`
}

// FailRequest ends a run as failed; Output carries at least "error".
type FailRequest struct {
	TaskRunID string          `json:"task_run_id"`
	Attempt   int             `json:"attempt,omitempty"`
	Output    json.RawMessage `json:"output"`
}

// ReportAck acknowledges a runtime's progress, complete or fail report.
type ReportAck struct {
	TaskRunID string      `json:"task_run_id"`
	Status    mesh.Status `json:"status"`
	Attempt   int         `json:"attempt"`
	Revision  uint64      `json:"revision"`
}

// AckOf acknowledges a report on run.
func AckOf(run *mesh.TaskRun) ReportAck {
	return ReportAck{TaskRunID: run.ID, Status: run.Status, Attempt: run.Attempt, Revision: run.Revision}
}

// TaskRunReply is a run after an operation.
type TaskRunReply struct {
	TaskRun mesh.TaskRun `json:"task_run"`
}
