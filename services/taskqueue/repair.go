package taskqueue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// Queue repair: a pending run must have a queue message, or no runtime will
// ever claim it. A message goes missing when publishing it failed (the
// queue's leader was being elected, the queue was full) or the process that
// changed the run died before publishing. Two loops make sure it comes back:
//
//   - a run whose enqueue failed in this process is tried again every
//     retryInterval until the message is stored or the run is no longer
//     pending;
//   - every RepairInterval, every pending run (however old) without a
//     message is queued again under a fresh message id: the id of the lost
//     message may still be in JetStream's duplicate window, which would drop
//     a re-publish under the same id.
//
// Copies of the service may both repair the same run; the second message is
// refused at claim and terminated, so that costs nothing but a message.

// repairSettle is how long a pending run is left alone after a change, so the
// repair never races the create or re-queue that is about to publish.
const repairSettle = 5 * time.Second

// retryInterval is how often failed enqueues are tried again.
const retryInterval = time.Second

// unqueued holds the runs whose enqueue failed in this process.
type unqueued struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (u *unqueued) add(id string) {
	u.mu.Lock()
	if u.ids == nil {
		u.ids = map[string]bool{}
	}
	u.ids[id] = true
	u.mu.Unlock()
}

func (u *unqueued) take() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]string, 0, len(u.ids))
	for id := range u.ids {
		out = append(out, id)
	}
	u.ids = nil
	return out
}

// enqueueOrRetry publishes a pending run's queue message; a failure is
// logged and the run handed to the retry loop, so the caller's change
// stands either way.
func (s *Service) enqueueOrRetry(ctx context.Context, run *mesh.TaskRun) {
	if err := s.enqueue(ctx, run); err != nil {
		s.cfg.Logger.Warn().Err(err).Str("task_run_id", run.ID).Msg("enqueue failed; retrying")
		s.unqueued.add(run.ID)
	}
}

// retryEnqueues tries again the enqueues that failed (the requeuer runs it
// every retryInterval).
func (s *Service) retryEnqueues(ctx context.Context) {
	for _, id := range s.unqueued.take() {
		if ctx.Err() != nil {
			s.unqueued.add(id)
			continue
		}
		s.retryEnqueue(ctx, id)
	}
}

// retryEnqueue publishes the queue message of a run whose enqueue failed,
// if it is still pending; another failure keeps it for the next try.
func (s *Service) retryEnqueue(ctx context.Context, runID string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	unlock := s.locks.lock(runID)
	defer unlock()
	run, err := s.getRun(ctx, runID)
	if err != nil {
		if !errors.Is(err, mesh.ErrNotFound) {
			s.unqueued.add(runID)
		}
		return
	}
	if run.Status != mesh.StatusPending {
		return
	}
	if err := s.enqueue(ctx, run); err != nil {
		s.unqueued.add(runID)
		return
	}
	s.cfg.Logger.Info().Str("task_run_id", runID).Msg("task run queued after an earlier failure")
}

// repair re-queues every settled pending run that has no queue message
// (the repairer runs it at start and every RepairInterval).
func (s *Service) repair(ctx context.Context) {
	settled := time.Now().Add(-repairSettle)
	for _, r := range s.index.activeRuns() {
		if ctx.Err() != nil {
			return
		}
		if r.status != mesh.StatusPending || r.updatedAt.After(settled) {
			continue
		}
		s.repairRun(ctx, r.id)
	}
}

func (s *Service) repairRun(ctx context.Context, runID string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	unlock := s.locks.lock(runID)
	defer unlock()
	run, err := s.getRun(ctx, runID)
	if err != nil || run.Status != mesh.StatusPending {
		return
	}
	ok, err := s.queued(ctx, run)
	if err != nil || ok {
		return
	}
	msgID := fmt.Sprintf("%s.%d.%d.repair.%s", run.ID, run.Attempt+1, run.Revision, mesh.NewID())
	if err := s.publishQueued(ctx, run, msgID); err != nil {
		s.cfg.Logger.Warn().Err(err).Str("task_run_id", runID).Msg("repair enqueue failed; will retry")
		s.unqueued.add(runID)
		return
	}
	s.cfg.Logger.Info().Str("task_run_id", runID).Msg("pending task run had no queue message; re-queued")
	// Its creator may have died before announcing it too.
	s.announceCreated(ctx, run)
}
