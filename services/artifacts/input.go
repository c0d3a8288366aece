package artifacts

import (
	"context"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Input files: the files a caller gives an agent with a message (A2A file
// parts), which the A2A endpoint writes through this service as a runtime
// writes a run's artifacts: opened on a service subject, sent in chunks to
// bus.ArtifactInputSubject, ended with the file's name and media type. They
// belong to the conversation and its target agent, not to a run: the run
// that reads one is created after it, with its id in input.attachments.

func (s *Service) handleOpenInput(ctx context.Context, in *meshapi.OpenInputRequest) (*meshapi.OpenArtifactResponse, error) {
	if !mesh.ValidID(in.AgentID) || !mesh.ValidID(in.ConversationID) {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "agent_id and conversation_id are required")
	}
	if in.Size > s.cfg.MaxBytes {
		return nil, tooLarge(in.Size, s.cfg.MaxBytes)
	}
	conv, err := s.client.GetConversation(ctx, in.ConversationID)
	if err != nil {
		return nil, err
	}
	u := &upload{id: mesh.NewID(), agentID: in.AgentID, input: conv, declared: in.Size}
	if err := s.startUpload(u, bus.ArtifactInputSubject(u.id)); err != nil {
		return nil, err
	}
	return &meshapi.OpenArtifactResponse{ArtifactID: u.id, ChunkBytes: chunkBytes, MaxBytes: s.cfg.MaxBytes}, nil
}

// commitInput registers the stored content of an input file. It is not
// announced as artifact.created, which tells of a run's outputs.
func (s *Service) commitInput(ctx context.Context, agentID string, conv *mesh.Conversation, in *mesh.Artifact) (*mesh.Artifact, error) {
	a := *in
	size, err := s.storedSize(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	a.TaskRunID = ""
	a.Role = mesh.ArtifactRoleInput
	a.Size = size
	a.AgentID = agentID
	a.ConversationID, a.WorkspaceID = conv.ID, conv.WorkspaceID
	a.CreatedAt = time.Now().UTC()
	if _, err := s.meta.Create(ctx, metaKey(a.ID), &a); err != nil {
		return nil, err
	}
	return &a, nil
}
