package taskqueue

import (
	"context"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// Queue repair: a pending run must have a queue message, or no runtime will
// ever claim it. A message goes missing only when the process that changed the
// run died between writing the record and publishing the message, so at start
// every pending run is checked, and then periodically the recently changed ones.

// repairSettle is how long a pending run is left alone after a change, so the
// repair never races the create or re-queue that is about to publish.
const repairSettle = 5 * time.Second

func (s *Service) repairLoop() {
	defer s.wg.Done()
	s.repair(time.Time{})
	t := time.NewTicker(s.cfg.RepairInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			// Look back two intervals so a run is never missed between sweeps.
			s.repair(time.Now().Add(-2*s.cfg.RepairInterval - repairSettle))
		}
	}
}

// repair re-queues pending runs changed after since that have no queue message.
func (s *Service) repair(since time.Time) {
	settled := time.Now().Add(-repairSettle)
	for _, r := range s.index.activeRuns() {
		select {
		case <-s.stop:
			return
		default:
		}
		if r.status != mesh.StatusPending || r.updatedAt.Before(since) || r.updatedAt.After(settled) {
			continue
		}
		s.repairRun(r.id)
	}
}

func (s *Service) repairRun(runID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
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
	s.cfg.Logger.Info().Str("task_run_id", runID).Msg("pending task run had no queue message; re-queued")
	if err := s.enqueue(ctx, run); err != nil {
		s.cfg.Logger.Warn().Err(err).Str("task_run_id", runID).Msg("repair enqueue failed")
	}
}
