package meshapi

import (
	"context"
	"encoding/json"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// Delegation from inside a run: a runtime asks, for a run it holds, which
// agents it may delegate to, sends one of them a task, follows and cancels
// it. The platform checks that the runtime holds the run and that the
// agent's delegation policy allows the target; the task goes through the
// target's A2A endpoint like a routing rule's, as a child of the run.

// DelegateAgentsRequest asks which agents a held run may delegate to.
type DelegateAgentsRequest struct {
	TaskRunID string `json:"task_run_id"`
}

// DelegateAgent is an agent a run may delegate to.
type DelegateAgent struct {
	AgentID     string       `json:"agent_id"`
	Name        string       `json:"name"`
	Description string       `json:"description,omitempty"`
	Skills      []mesh.Skill `json:"skills,omitempty"`
	// Online says whether one of the agent's runtimes is online.
	Online bool `json:"online"`
}

// DelegateAgentList lists the agents a run may delegate to.
type DelegateAgentList struct {
	Agents []DelegateAgent `json:"agents"`
}

// DelegateFile is a file sent with a delegated task.
type DelegateFile struct {
	Name     string `json:"name"`
	MimeType string `json:"mime_type,omitempty"`
	Content  []byte `json:"content"`
}

// DelegateSendRequest sends a task to another agent on behalf of a held run.
type DelegateSendRequest struct {
	TaskRunID string         `json:"task_run_id"`
	AgentID   string         `json:"agent_id"`
	Text      string         `json:"text"`
	Files     []DelegateFile `json:"files,omitempty"`
	// RequestID makes a repeated send the same task (the runtime's id for
	// this call).
	RequestID string `json:"request_id"`
}

// DelegateSendResponse names the delegated task: its run id is its A2A task id.
type DelegateSendResponse struct {
	TaskRunID string `json:"task_run_id"`
	AgentID   string `json:"agent_id"`
}

// DelegateGetRequest asks for a delegated task's state; Wait, when set, waits
// up to that long for it to end first.
type DelegateGetRequest struct {
	TaskRunID string        `json:"task_run_id"`
	ChildID   string        `json:"child_task_run_id"`
	Wait      time.Duration `json:"wait,omitempty"`
}

// DelegatedTask is a delegated task as the delegating run sees it.
type DelegatedTask struct {
	TaskRunID string             `json:"task_run_id"`
	AgentID   string             `json:"agent_id"`
	Status    mesh.Status        `json:"status"`
	Progress  *mesh.Progress     `json:"progress,omitempty"`
	Output    json.RawMessage    `json:"output,omitempty"`
	Error     *mesh.RunError     `json:"error,omitempty"`
	Artifacts []mesh.ArtifactRef `json:"artifacts,omitempty"`
}

// DelegateArtifactRequest asks for the content of a delegated task's artifact.
type DelegateArtifactRequest struct {
	TaskRunID  string `json:"task_run_id"`
	ChildID    string `json:"child_task_run_id"`
	ArtifactID string `json:"artifact_id"`
}

// DelegateArtifactResponse is an artifact's content.
type DelegateArtifactResponse struct {
	Filename string `json:"filename"`
	MimeType string `json:"mime_type,omitempty"`
	Content  []byte `json:"content"`
}

// DelegateCancelRequest cancels a delegated task.
type DelegateCancelRequest struct {
	TaskRunID string `json:"task_run_id"`
	ChildID   string `json:"child_task_run_id"`
}

// InHost sends the delegation operations of the runs a runtime holds,
// through any Sender: the runtime's bus client, or its HTTP transport. It
// is the tool server's platform (toolserver.Platform).
type InHost struct{ s Sender }

// NewInHost returns the delegation operations sent through s.
func NewInHost(s Sender) InHost { return InHost{s: s} }

// DelegateAgents lists the agents a held run may delegate to.
func (c InHost) DelegateAgents(ctx context.Context, req DelegateAgentsRequest) (*DelegateAgentList, error) {
	return Send(ctx, c.s, OpRuntimeDelegateAgents, req)
}

// DelegateSend sends a task to another agent for a held run.
func (c InHost) DelegateSend(ctx context.Context, req DelegateSendRequest) (*DelegateSendResponse, error) {
	return Send(ctx, c.s, OpRuntimeDelegateSend, req)
}

// DelegateGet returns a delegated task's state, waiting up to req.Wait for
// it to end.
func (c InHost) DelegateGet(ctx context.Context, req DelegateGetRequest) (*DelegatedTask, error) {
	return Send(ctx, c.s, OpRuntimeDelegateGet, req)
}

// DelegateArtifact returns a delegated task's artifact.
func (c InHost) DelegateArtifact(ctx context.Context, req DelegateArtifactRequest) (*DelegateArtifactResponse, error) {
	return Send(ctx, c.s, OpRuntimeDelegateArtifact, req)
}

// DelegateCancel cancels a delegated task.
func (c InHost) DelegateCancel(ctx context.Context, req DelegateCancelRequest) (*DelegatedTask, error) {
	return Send(ctx, c.s, OpRuntimeDelegateCancel, req)
}
