package taskqueue

import (
	"context"
	"errors"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

func (s *Service) handleGet(ctx context.Context, in *meshapi.GetTaskRunRequest) (*meshapi.TaskRunReply, error) {
	run, err := s.getRun(ctx, in.TaskRunID)
	if err != nil {
		return nil, err
	}
	return &meshapi.TaskRunReply{TaskRun: *run.Public()}, nil
}

func (s *Service) getRun(ctx context.Context, id string) (*mesh.TaskRun, error) {
	if !mesh.ValidID(id) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "task run %q not found", id)
	}
	run, rev, err := s.runs.Get(ctx, id)
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "task run %s not found", id)
	}
	if err != nil {
		return nil, err
	}
	run.Revision = rev
	return run, nil
}

// peekRun is getRun for answers that decide nothing (lists): it may read a
// replica a moment behind the latest revision.
func (s *Service) peekRun(ctx context.Context, id string) (*mesh.TaskRun, error) {
	run, rev, err := s.runs.Peek(ctx, id)
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "task run %s not found", id)
	}
	if err != nil {
		return nil, err
	}
	run.Revision = rev
	return run, nil
}

func (s *Service) handleList(ctx context.Context, in *meshapi.ListTaskRunsRequest) (*meshapi.TaskRunList, error) {
	switch {
	case in.Limit == 0:
		in.Limit = meshapi.DefaultListLimit
	case in.Limit < 0 || (in.Limit > meshapi.MaxListLimit && !bus.RequestOf(ctx).HandedOver):
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "limit must be between 1 and %d", meshapi.MaxListLimit)
	}
	if in.Offset < 0 {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "offset must not be negative")
	}
	if in.Status != "" && !in.Status.Valid() {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "unknown status %q", in.Status)
	}
	if in.ConversationID != "" && !mesh.ValidID(in.ConversationID) {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "conversation_id is not a valid id")
	}
	if in.Cursor != "" && !mesh.ValidID(in.Cursor) {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "malformed cursor")
	}
	if others := s.homes.Others(); in.AgentID == "" && !bus.RequestOf(ctx).HandedOver && len(others) > 0 {
		return s.listEverywhere(ctx, bus.RequestOf(ctx), *in, others)
	}
	return s.listHere(ctx, *in)
}

// listHere lists the runs this region keeps.
func (s *Service) listHere(ctx context.Context, in meshapi.ListTaskRunsRequest) (*meshapi.TaskRunList, error) {
	// Runs written by another instance a moment ago are listed too.
	if err := s.runView.Sync(ctx); err != nil {
		return nil, err
	}
	ids, more, total := s.index.page(filter{agentID: in.AgentID, conversationID: in.ConversationID, status: in.Status}, in.Cursor, in.Offset, in.Limit, in.WithTotal)
	out := meshapi.TaskRunList{TaskRuns: make([]mesh.TaskRun, 0, len(ids))}
	for _, id := range ids {
		// A list may be a moment old; it decides nothing.
		run, err := s.peekRun(ctx, id)
		if errors.Is(err, mesh.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out.TaskRuns = append(out.TaskRuns, *run.Public())
	}
	if more && len(ids) > 0 {
		out.NextCursor = ids[len(ids)-1]
	}
	if in.WithTotal {
		out.Total = &total
	}
	return &out, nil
}
