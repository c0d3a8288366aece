package meshapi

import (
	"context"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
)

// Artifact operations (service "artifacts").
const (
	OpArtifactCommit      = "commit"
	OpArtifactCommitInput = "commit_input"
	OpArtifactGet         = "get"
	OpArtifactList        = "list"
)

// CommitArtifactRequest registers content already written to the artifact
// object store under Artifact.ID for the run a runtime is working on.
type CommitArtifactRequest struct {
	AgentID   string        `json:"agent_id"`
	RuntimeID string        `json:"runtime_id"`
	Attempt   int           `json:"attempt,omitempty"`
	Artifact  mesh.Artifact `json:"artifact"`
}

// CommitInputRequest registers content a front endpoint already wrote to the
// artifact object store under Artifact.ID as a file given to AgentID in a
// conversation's input (an A2A file part): no run owns it yet.
type CommitInputRequest struct {
	AgentID        string        `json:"agent_id"`
	ConversationID string        `json:"conversation_id"`
	Artifact       mesh.Artifact `json:"artifact"`
}

// GetArtifactRequest names an artifact.
type GetArtifactRequest struct {
	ArtifactID string `json:"artifact_id"`
}

// ListArtifactsRequest lists a run's artifacts.
type ListArtifactsRequest struct {
	TaskRunID string `json:"task_run_id"`
}

// ArtifactList is a run's artifacts, oldest first.
type ArtifactList struct {
	Artifacts []mesh.Artifact `json:"artifacts"`
}

// CommitArtifact registers stored artifact content.
func (c *Client) CommitArtifact(ctx context.Context, req CommitArtifactRequest) (*mesh.Artifact, error) {
	var a mesh.Artifact
	return &a, c.call(ctx, bus.ServiceArtifacts, OpArtifactCommit, req, &a)
}

// GetArtifact returns artifact metadata.
func (c *Client) GetArtifact(ctx context.Context, artifactID string) (*mesh.Artifact, error) {
	var a mesh.Artifact
	return &a, c.call(ctx, bus.ServiceArtifacts, OpArtifactGet, GetArtifactRequest{ArtifactID: artifactID}, &a)
}

// ListArtifacts lists a run's artifacts.
func (c *Client) ListArtifacts(ctx context.Context, taskRunID string) (*ArtifactList, error) {
	var l ArtifactList
	return &l, c.call(ctx, bus.ServiceArtifacts, OpArtifactList, ListArtifactsRequest{TaskRunID: taskRunID}, &l)
}

// CommitInputArtifact registers stored content as a file of a conversation's input.
func (c *Client) CommitInputArtifact(ctx context.Context, req CommitInputRequest) (*mesh.Artifact, error) {
	var a mesh.Artifact
	return &a, c.call(ctx, bus.ServiceArtifacts, OpArtifactCommitInput, req, &a)
}
