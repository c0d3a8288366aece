package mesh

import (
	"strings"
	"time"
)

// Artifact roles. An artifact is a run's output unless it was given to the
// agent as part of a conversation input (an A2A file part).
const (
	ArtifactRoleOutput = ""
	ArtifactRoleInput  = "input"
)

// Artifact is the metadata of a file: a deliverable of a task run, or a file
// given to an agent with a conversation input (Role input, no TaskRunID: it
// is stored before the run that reads it exists). Its content lives in the
// artifact object store under ArtifactID.
type Artifact struct {
	ID             string    `json:"artifact_id"`
	TaskRunID      string    `json:"task_run_id,omitempty"`
	Role           string    `json:"role,omitempty"`
	AgentID        string    `json:"agent_id"`
	ConversationID string    `json:"conversation_id,omitempty"`
	WorkspaceID    string    `json:"workspace_id,omitempty"`
	ArtifactType   string    `json:"artifact_type,omitempty"`
	Filename       string    `json:"filename"`
	Title          string    `json:"title,omitempty"`
	Summary        string    `json:"summary,omitempty"`
	Keywords       []string  `json:"keywords,omitempty"`
	MimeType       string    `json:"mime_type"`
	Size           int64     `json:"size"`
	SHA256         string    `json:"sha256"`
	CreatedAt      time.Time `json:"created_at"`
}

// Ref returns the reference stored on the run and returned to the runtime.
func (a *Artifact) Ref() ArtifactRef {
	return ArtifactRef{
		ArtifactID:   a.ID,
		Filename:     a.Filename,
		ArtifactType: a.ArtifactType,
		Title:        a.Title,
		MimeType:     a.MimeType,
		Size:         a.Size,
		CreatedAt:    a.CreatedAt,
	}
}

// OutputRef is the part a runtime appends to a run's output for an artifact
// it wrote (seed 000 step 4).
type OutputRef struct {
	Type       string `json:"type"`
	ArtifactID string `json:"artifact_id"`
	Filename   string `json:"filename"`
	Title      string `json:"title,omitempty"`
	MimeType   string `json:"mime_type"`
	Size       int64  `json:"size"`
	URI        string `json:"uri"`
}

// OutputRef returns the artifact's output part.
func (a *Artifact) OutputRef() OutputRef {
	return OutputRef{
		Type: "artifact_ref", ArtifactID: a.ID, Filename: a.Filename, Title: a.Title,
		MimeType: a.MimeType, Size: a.Size, URI: "/artifacts/" + a.ID + "/content",
	}
}

// NormalizeFilename cleans an artifact filename into a relative, slash-separated
// path. Absolute paths, ".." segments, backslashes, control characters and
// empty names are refused: a filename never escapes the run's workspace.
func NormalizeFilename(name string) (string, error) {
	if name == "" || len(name) > 512 {
		return "", Errorf(CodeInvalidRequest, "filename must be 1-512 bytes")
	}
	if strings.HasPrefix(name, "/") || strings.Contains(name, `\`) || (len(name) > 1 && name[1] == ':') {
		return "", Errorf(CodeInvalidRequest, "filename %q must be a relative path", name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return "", Errorf(CodeInvalidRequest, "filename contains a control character")
		}
	}
	parts := strings.Split(name, "/")
	clean := parts[:0]
	for _, p := range parts {
		switch p {
		case "", ".":
			continue
		case "..":
			return "", Errorf(CodeInvalidRequest, "filename %q must not contain '..'", name)
		}
		clean = append(clean, p)
	}
	if len(clean) == 0 {
		return "", Errorf(CodeInvalidRequest, "filename %q names no file", name)
	}
	out := strings.Join(clean, "/")
	// Dropping a leading "./" can bring a drive letter to the front ("./C:x").
	if len(out) > 1 && out[1] == ':' {
		return "", Errorf(CodeInvalidRequest, "filename %q must be a relative path", name)
	}
	return out, nil
}
