package taskqueue

import (
	"context"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

const maxReasonLen = 1000

func (s *Service) handleCancel(ctx context.Context, req *bus.Request) (any, error) {
	var in meshapi.CancelTaskRunRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if len(in.Reason) > maxReasonLen {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "reason is longer than %d characters", maxReasonLen)
	}
	run, err := s.cancel(ctx, in.TaskRunID, in.Reason)
	if err != nil {
		return nil, err
	}
	return meshapi.TaskRunReply{TaskRun: *run.Public()}, nil
}

// cancel ends a run that has not ended. A notice on its agent's cancel
// subject reaches the runtime working on it at once, which aborts its
// adapter request.
func (s *Service) cancel(ctx context.Context, runID, reason string) (*mesh.TaskRun, error) {
	if reason == "" {
		reason = "canceled by request"
	}
	held := false
	run, err := s.transition(ctx, runID, func(r *mesh.TaskRun) (string, error) {
		held = r.RuntimeID != ""
		now := time.Now().UTC()
		r.Status = mesh.StatusCanceled
		r.Error = &mesh.RunError{Code: mesh.ReasonCanceled, Message: reason}
		r.EndedAt = &now
		r.LeaseExpiresAt = nil
		return mesh.EventTaskRunCanceled, nil
	})
	if err == nil && held {
		if err := s.cfg.Conn.NC.Publish(bus.CancelSubject(run.TargetAgentID, run.ID), nil); err != nil {
			s.cfg.Logger.Warn().Err(err).Str("task_run_id", run.ID).Msg("cancel notice not sent; the runtime hears of it at its next renewal")
		}
	}
	return run, err
}
