package meshapi

import "github.com/a2amesh/a2amesh/mesh"

// Artifact operations (service "artifacts").
const (
	OpArtifactCommit = "commit"
	OpArtifactGet    = "get"
	OpArtifactList   = "list"
)

// CommitArtifactRequest registers content already written to the artifact
// object store under Artifact.ID for the run a runtime is working on.
type CommitArtifactRequest struct {
	AgentID   string        `json:"agent_id"`
	RuntimeID string        `json:"runtime_id"`
	Attempt   int           `json:"attempt,omitempty"`
	Artifact  mesh.Artifact `json:"artifact"`
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
