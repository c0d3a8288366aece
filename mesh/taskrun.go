package mesh

import (
	"encoding/json"
	"time"
)

// TaskRun is one unit of work for one agent: the platform's system of record
// for execution (seed 001 names). Every change to it is a compare-and-set on its
// record's revision.
type TaskRun struct {
	ID               string          `json:"task_run_id"`
	ConversationID   string          `json:"conversation_id"`
	WorkspaceID      string          `json:"workspace_id"`
	TaskType         string          `json:"task_type"`
	Input            json.RawMessage `json:"input"`
	InitiatorAgentID string          `json:"initiator_agent_id,omitempty"`
	TargetAgentID    string          `json:"target_agent_id"`
	Status           Status          `json:"status"`
	RuntimeID        string          `json:"runtime_id,omitempty"`
	// Attempt counts claims: 0 while never claimed, 1 for the first claim.
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"max_attempts"`
	Progress    *Progress       `json:"progress,omitempty"`
	Output      json.RawMessage `json:"output,omitempty"`
	Error       *RunError       `json:"error,omitempty"`
	Artifacts   []ArtifactRef   `json:"artifacts,omitempty"`
	// IdempotencyKey, when set at creation, makes a repeated create return this run.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Deadline bounds the whole run: pending or running past it, it fails with
	// DEADLINE_EXCEEDED.
	Deadline       *time.Time `json:"deadline,omitempty"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	ClaimedAt      *time.Time `json:"claimed_at,omitempty"`
	EndedAt        *time.Time `json:"ended_at,omitempty"`
	// Metadata is free-form caller data (never business instructions, seed 001 §10).
	Metadata map[string]any `json:"metadata,omitempty"`
	// Revision is the record's store revision; it is filled on read and is the
	// value a compare-and-set is made against.
	Revision uint64 `json:"revision"`
}

// Progress is the latest progress a runtime reported for a run.
type Progress struct {
	Message   string    `json:"message,omitempty"`
	Percent   *float64  `json:"percent,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// RunError says why a run failed or was canceled.
type RunError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// ArtifactRef points at an artifact materialised for a run.
type ArtifactRef struct {
	ArtifactID   string    `json:"artifact_id"`
	Filename     string    `json:"filename"`
	ArtifactType string    `json:"artifact_type,omitempty"`
	Title        string    `json:"title,omitempty"`
	MimeType     string    `json:"mime_type"`
	Size         int64     `json:"size"`
	CreatedAt    time.Time `json:"created_at"`
}

// InputText returns input.text when the input carries one.
func (r *TaskRun) InputText() string {
	var in struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(r.Input, &in)
	return in.Text
}

// Conversation is the context boundary of a group of task runs; it owns exactly
// one workspace (seed 001 §10: context never crosses conversations).
type Conversation struct {
	ID          string         `json:"conversation_id"`
	WorkspaceID string         `json:"workspace_id"`
	CreatedAt   time.Time      `json:"created_at"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}
