package taskqueue

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

func (s *Service) handleConversationCreate(ctx context.Context, in *meshapi.CreateConversationRequest) (*mesh.Conversation, error) {
	if meta, _ := json.Marshal(in.Metadata); len(meta) > maxMetadataBytes {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "metadata is larger than %d bytes", maxMetadataBytes)
	}
	return s.createConversation(ctx, in.Metadata)
}

func (s *Service) handleConversationGet(ctx context.Context, in *meshapi.GetConversationRequest) (*mesh.Conversation, error) {
	return s.getConversation(ctx, in.ConversationID)
}

// createConversation starts a conversation with its own workspace: the
// context boundary of seed 001 §10.
func (s *Service) createConversation(ctx context.Context, meta map[string]any) (*mesh.Conversation, error) {
	conv := &mesh.Conversation{ID: mesh.NewID(), WorkspaceID: mesh.NewID(), CreatedAt: time.Now().UTC(), Metadata: meta}
	if _, err := s.convs.Create(ctx, conv.ID, conv); err != nil {
		return nil, err
	}
	return conv, nil
}

// startConversation starts the conversation of a run created without one:
// under the run's own id, held by the run record alone (a conversation
// record would be one more write for every such run, and most have no
// second turn). Two creates with one idempotency key make the same run,
// and so share the conversation of whichever stores it first.
func startConversation(run *mesh.TaskRun) {
	run.ConversationID, run.WorkspaceID = run.ID, mesh.NewID()
}

// findConversation returns a conversation kept here or, started in another
// region (a conversation is kept where it was started, and may go on with
// agents of any region), kept there: the task queue's own get, which asks
// the other regions for what this one does not keep.
func (s *Service) findConversation(ctx context.Context, id string) (*mesh.Conversation, error) {
	conv, err := s.getConversation(ctx, id)
	if !errors.Is(err, mesh.ErrNotFound) || len(s.homes.Others()) == 0 {
		return conv, err
	}
	return s.client.GetConversation(ctx, id)
}

// getConversation reads a conversation: its record, or, for one a run
// started, that run.
func (s *Service) getConversation(ctx context.Context, id string) (*mesh.Conversation, error) {
	if !mesh.ValidID(id) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "conversation %q not found", id)
	}
	conv, _, err := s.convs.Get(ctx, id)
	if !errors.Is(err, mesh.ErrNotFound) {
		return conv, err
	}
	run, _, err := s.runs.Get(ctx, id)
	switch {
	case errors.Is(err, mesh.ErrNotFound) || (err == nil && run.ConversationID != id):
		return nil, mesh.Errorf(mesh.CodeNotFound, "conversation %s not found", id)
	case err != nil:
		return nil, err
	}
	return &mesh.Conversation{ID: id, WorkspaceID: run.WorkspaceID, CreatedAt: run.CreatedAt}, nil
}
