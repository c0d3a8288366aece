package taskqueue

import (
	"context"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

const maxReasonLen = 1000

func (s *Service) handleCancel(ctx context.Context, in *meshapi.CancelTaskRunRequest) (*meshapi.TaskRunReply, error) {
	if len(in.Reason) > maxReasonLen {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "reason is longer than %d characters", maxReasonLen)
	}
	run, err := s.cancel(ctx, in.TaskRunID, in.Reason)
	if err != nil {
		return nil, err
	}
	return &meshapi.TaskRunReply{TaskRun: *run.Public()}, nil
}

// cancel ends a run that has not ended. The runtime working on it hears of
// it at once through its waiting request for cancels (handleCanceled), from
// whichever copy of the task queue holds that request, and aborts its
// adapter request.
func (s *Service) cancel(ctx context.Context, runID, reason string) (*mesh.TaskRun, error) {
	if reason == "" {
		reason = "canceled by request"
	}
	return s.transition(ctx, runID, func(r *mesh.TaskRun) (string, error) {
		return cancelRun(r, reason), nil
	})
}

// cancelRun ends r as canceled for reason and returns the event of the
// change.
func cancelRun(r *mesh.TaskRun, reason string) string {
	now := time.Now().UTC()
	r.Status = mesh.StatusCanceled
	r.Error = &mesh.RunError{Code: mesh.ReasonCanceled, Message: reason}
	r.EndedAt = &now
	r.LeaseExpiresAt = nil
	return mesh.EventTaskRunCanceled
}

// handleCanceled answers a runtime's request to hear of cancels of the runs
// it holds (meshapi.CanceledRequest): at once for runs already canceled,
// else when one is, or empty when the wait ends. The answer goes to the
// runtime's own reply inbox and nowhere else, which is why cancels are
// answers and not notices on a subject: within the runtimes' account any
// runtime may name any subject as a request's reply, so a subject another
// runtime listens on could be sent anything.
func (s *Service) handleCanceled(ctx context.Context, in *meshapi.CanceledRequest) (*meshapi.CanceledResponse, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	if len(in.TaskRunIDs) > maxRenewal {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "at most %d task runs per request", maxRenewal)
	}
	if in.Wait < 0 || in.Wait > s.cfg.MaxPullWait {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "wait must be between 0 and %s", s.cfg.MaxPullWait)
	}
	if err := s.runtimes.Check(ctx, agentID, runtimeID, false); err != nil {
		return nil, err
	}
	release, err := s.cancelWaiters.admit(runtimeID)
	if err != nil {
		return nil, err
	}
	defer release()
	w, already := s.index.watchCancels(runtimeID, in.TaskRunIDs)
	if len(already) > 0 {
		s.index.unwatchCancels(runtimeID, w)
		return &meshapi.CanceledResponse{Canceled: already}, nil
	}
	timer := time.NewTimer(in.Wait)
	defer timer.Stop()
	select {
	case <-w.woken:
	case <-timer.C:
	case <-ctx.Done():
	case <-s.stopped:
	}
	return &meshapi.CanceledResponse{Canceled: s.index.unwatchCancels(runtimeID, w)}, nil
}
