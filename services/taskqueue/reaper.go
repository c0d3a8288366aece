package taskqueue

import (
	"context"
	"errors"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// The reaper guarantees that every run ends (design §3 "No orphans"): a
// running run whose lease expired goes back to pending while its attempts
// allow, and otherwise fails with RUNTIME_LOST; any run past its deadline
// fails with DEADLINE_EXCEEDED; a run whose agent no longer exists is
// canceled as deleting the agent cancels its runs.

// reap handles every run whose lease or deadline has passed, or whose
// agent is gone (the reaper runs it every ReapInterval).
func (s *Service) reap(ctx context.Context) {
	now := time.Now()
	// Leases that ran out while the platform itself was down could not have
	// been renewed; they get one lease period from start-up before they count.
	grace := s.startedAt.Add(s.cfg.Lease)
	gone := map[string]bool{}
	for _, r := range s.index.activeRuns() {
		switch {
		case !r.deadline.IsZero() && now.After(r.deadline):
			s.expire(ctx, r.id, mesh.ReasonDeadlineExceeded, "the task run passed its deadline")
		case (r.status == mesh.StatusRunning || r.status == mesh.StatusApprovalRequired) && !r.lease.IsZero() && now.After(r.lease) && now.After(grace):
			s.loseLease(ctx, r.id)
		case s.agentGone(ctx, r.agentID, gone):
			s.cancelOfGoneAgent(ctx, r.id)
		}
	}
}

// agentGone says whether the agent no longer exists: the view does not
// hold it, and its bucket says it is not there (the view may not have
// seen a new agent yet). known keeps the answers of one reap, so an
// agent with many runs is asked about once.
func (s *Service) agentGone(ctx context.Context, agentID string, known map[string]bool) bool {
	if _, ok := s.agents.Get(agentID); ok {
		return false
	}
	if gone, ok := known[agentID]; ok {
		return gone
	}
	// Bounded: a bucket out of reach answers nothing here, and the reap's
	// leases and deadlines are not held up for it.
	ctx, cancel := context.WithTimeout(ctx, agentSync)
	defer cancel()
	_, _, err := s.agentStore.Get(ctx, agentID)
	known[agentID] = errors.Is(err, mesh.ErrNotFound)
	return known[agentID]
}

// cancelOfGoneAgent cancels a run whose agent no longer exists, as the
// agent's delete does (mesh.AgentDeletedMessage): the delete lists the
// agent's open runs, and a create decided by a view that still held the
// agent can store one after that.
func (s *Service) cancelOfGoneAgent(ctx context.Context, runID string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	canceled := false
	_, err := s.transition(ctx, runID, func(r *mesh.TaskRun) (string, error) {
		canceled = false
		if r.Status.Terminal() {
			// Ended meanwhile, or canceled by another copy.
			return "", errUnchanged
		}
		canceled = true
		return cancelRun(r, mesh.AgentDeletedMessage), nil
	})
	switch {
	case err != nil:
		s.cfg.Logger.Warn().Err(err).Str("task_run_id", runID).Msg("the run of an agent that no longer exists not canceled; will retry")
	case canceled:
		s.cfg.Logger.Info().Str("task_run_id", runID).Msg("canceled a run whose agent no longer exists")
	}
}

// expire fails a run that is past its deadline.
func (s *Service) expire(ctx context.Context, runID, code, message string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := s.transition(ctx, runID, func(r *mesh.TaskRun) (string, error) {
		if r.Status.Terminal() || r.Deadline == nil || time.Now().Before(*r.Deadline) {
			return "", errUnchanged
		}
		now := time.Now().UTC()
		r.Status = mesh.StatusFailed
		r.Error = &mesh.RunError{Code: code, Message: message}
		r.EndedAt = &now
		r.LeaseExpiresAt = nil
		return mesh.EventTaskRunFailed, nil
	})
	if err != nil {
		s.cfg.Logger.Warn().Err(err).Str("task_run_id", runID).Msg("deadline not enforced; will retry")
	}
}

// loseLease ends or re-queues a running run (or one whose host waits for an
// approval) whose runtime stopped renewing.
func (s *Service) loseLease(ctx context.Context, runID string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := s.transition(ctx, runID, func(r *mesh.TaskRun) (string, error) {
		if (r.Status != mesh.StatusRunning && r.Status != mesh.StatusApprovalRequired) || r.LeaseExpiresAt == nil || time.Now().Before(*r.LeaseExpiresAt) {
			return "", errUnchanged
		}
		lostRuntime := r.RuntimeID
		r.LeaseExpiresAt = nil
		// A step its host waited to have approved is asked no more: the
		// host is gone.
		r.PendingApproval = nil
		if r.Attempt < r.MaxAttempts {
			r.Status = mesh.StatusPending
			r.RuntimeID = ""
			r.ClaimedAt = nil
			r.Progress = nil
			return mesh.EventTaskRunRequeued, nil
		}
		now := time.Now().UTC()
		r.Status = mesh.StatusFailed
		r.EndedAt = &now
		r.Error = &mesh.RunError{
			Code:    mesh.ReasonRuntimeLost,
			Message: "the runtime stopped renewing its lease (killed, offline, or network lost)",
			Details: map[string]any{"runtime_id": lostRuntime, "attempt": r.Attempt},
		}
		if r.Delegated() {
			r.Error.Message = "the delegation service stopped renewing its lease (not running, or the platform was down too long)"
			r.Error.Details = map[string]any{"attempt": r.Attempt}
		}
		return mesh.EventTaskRunFailed, nil
	})
	if err != nil {
		s.cfg.Logger.Warn().Err(err).Str("task_run_id", runID).Msg("lease expiry not handled; will retry")
	}
}
