package meshapi

import "github.com/a2amesh/a2amesh/mesh"

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
