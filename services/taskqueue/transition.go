package taskqueue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
)

// errUnchanged, returned by a mutation, means the run is already in the state
// asked for (a repeated report): the current run is returned, nothing written.
var errUnchanged = errors.New("taskqueue: unchanged")

// mutation checks a run and changes it in place, returning the event type that
// announces the change ("" for none). It may run more than once, on a fresh
// copy each time, when another writer changed the run in between.
type mutation func(r *mesh.TaskRun) (eventType string, err error)

// transition applies m to the run with compare-and-set, publishes the event it
// names, and returns the run as stored. It is the only way runs change, and
// the one place the state machine (mesh.CanTransition) is enforced: a change
// of status the table does not allow is refused with INVALID_TRANSITION,
// whatever the mutation asked for. The event leaves through the outbox, after
// the run's lock is released; the caller waits for it as long as ctx allows.
func (s *Service) transition(ctx context.Context, runID string, m mutation) (*mesh.TaskRun, error) {
	return s.transitionFirst(ctx, runID, m, nil)
}

// transitionFirst is transition with an event of the same change queued
// before the mutation's own: first, when it returns an event type for the
// stored run (the task_run.usage of a report that also ends the run, so
// that a consumer that stops at the end has seen it).
func (s *Service) transitionFirst(ctx context.Context, runID string, m mutation, first func(*mesh.TaskRun) string) (*mesh.TaskRun, error) {
	if !mesh.ValidID(runID) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "task run %q not found", runID)
	}
	run, announced, err := s.transitionLocked(ctx, runID, m, first)
	if announced != nil {
		announced.wait(ctx)
	}
	return run, err
}

// transitionLocked is transition under the run's lock; it returns the
// event it queued, if any.
func (s *Service) transitionLocked(ctx context.Context, runID string, m mutation, first func(*mesh.TaskRun) string) (*mesh.TaskRun, *outgoing, error) {
	unlock := s.locks.lock(runID)
	defer unlock()
	for attempt := 0; ; attempt++ {
		run, rev, cached := s.recent.get(runID)
		if !cached || attempt > 0 {
			var err error
			if run, rev, err = s.runs.Get(ctx, runID); errors.Is(err, mesh.ErrNotFound) {
				return nil, nil, mesh.Errorf(mesh.CodeNotFound, "task run %s not found", runID)
			} else if err != nil {
				return nil, nil, err
			}
			cached = false
		}
		run.Revision = rev
		from := run.Status
		eventType, err := m(run)
		if err == nil && moves(from, run.Status, eventType) && !mesh.CanTransition(from, run.Status) {
			err = &mesh.Error{Code: mesh.CodeInvalidTransition, Message: fmt.Sprintf("task run %s is %s and cannot become %s", runID, from, run.Status), Status: from}
		}
		if err != nil && cached {
			// Refusals are decided on a fresh read, never on a cached copy.
			s.recent.drop(runID)
			continue
		}
		if errors.Is(err, errUnchanged) {
			if run.Status.Terminal() {
				// A repeated report or cancel: the first may have been
				// stored with its event lost.
				return run, s.announceLate(ctx, run, mesh.TaskRunEventType(run.Status)), nil
			}
			return run, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if run.Status.Terminal() {
			// What the host was to run with is needed no more, and may be secret.
			run.Environment = nil
		}
		run.UpdatedAt = time.Now().UTC()
		next, err := s.runs.Update(ctx, runID, run, rev)
		if errors.Is(err, mesh.ErrConflict) && attempt < 20 {
			s.recent.drop(runID)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("update task run %s: %w", runID, err)
		}
		run.Revision = next
		s.recent.put(run, next)
		if !from.Terminal() && run.Status.Terminal() {
			s.observeEnd(run)
		}
		// Queued in the outbox before the index shows the change, so an
		// offer finds the event on its way (see dispatch.go).
		var out *outgoing
		if first != nil {
			if t := first(run); t != "" {
				out = s.announceAs(ctx, t, run, fmt.Sprintf("%s.%d.%s", run.ID, run.Revision, strings.TrimPrefix(t, mesh.EventTypePrefix)))
			}
		}
		if eventType != "" {
			out = s.announce(ctx, eventType, run)
		}
		s.runView.Apply(runID, headOf(run), next)
		return run, out, nil
	}
}

// moves reports whether a mutation is a move of the state machine: it
// changes the status, or announces entering one (a second cancel of a
// canceled run is a move from canceled to canceled, which is refused).
func moves(from, to mesh.Status, eventType string) bool {
	return from != to || eventType == mesh.TaskRunEventType(to) || eventType == mesh.EventTaskRunRequeued
}

// announce queues the event of a run's stored change in the outbox. Call
// it under the run's lock, so a run's events leave in revision order.
func (s *Service) announce(ctx context.Context, eventType string, run *mesh.TaskRun) *outgoing {
	return s.announceAs(ctx, eventType, run, fmt.Sprintf("%s.%d", run.ID, run.Revision))
}

// announceAs is announce with the event id given: a second event about
// the same revision needs an id of its own.
func (s *Service) announceAs(ctx context.Context, eventType string, run *mesh.TaskRun, id string) *outgoing {
	return s.outbox.add(inRunTrace(ctx, run), bus.Event{
		Type:     eventType,
		Kind:     mesh.KindTaskRun,
		AgentID:  run.TargetAgentID,
		Subject:  run.ID,
		ID:       id,
		Sequence: run.Revision,
		Data:     run.Public(),
		Time:     run.UpdatedAt,
	})
}

// announceLate queues the event announcing run's present state (of type
// want) when the newest event stored about the run is another: the change
// was stored but its event was lost with a node, or with the process that
// stored it. The event carries the id the first publish would have had (run
// id and revision), so one that was stored after all is a duplicate. Call
// it under the run's lock.
func (s *Service) announceLate(ctx context.Context, run *mesh.TaskRun, want string) *outgoing {
	last, err := s.events.LastType(ctx, run.TargetAgentID, mesh.KindTaskRun, run.ID)
	if err != nil {
		s.cfg.Logger.Warn().Ctx(ctx).Err(err).Str("task_run_id", run.ID).Msg("could not check the run's last event")
		return nil
	}
	if last == want {
		return nil
	}
	s.cfg.Logger.Warn().Ctx(ctx).Str("task_run_id", run.ID).Str("type", want).Str("last", last).Msg("run stored without its event; publishing it now")
	return s.announce(ctx, want, run)
}

// announceCreated queues the created event of a never-claimed run when no
// event about the run was stored at all (its creator stored the run and
// failed, or died, before announcing it), and returns it (nil when it did
// not). Call it under the run's lock.
func (s *Service) announceCreated(ctx context.Context, run *mesh.TaskRun) *outgoing {
	if run.Status != mesh.StatusPending || run.Attempt != 0 {
		return nil
	}
	last, err := s.events.LastType(ctx, run.TargetAgentID, mesh.KindTaskRun, run.ID)
	if err != nil || last != "" {
		return nil
	}
	s.cfg.Logger.Warn().Ctx(ctx).Str("task_run_id", run.ID).Msg("run stored without its created event; publishing it now")
	return s.announce(ctx, mesh.EventTaskRunCreated, run)
}

// completeCreate finishes the create of a run that an idempotent retry
// found stored: if its creator did not announce it, that is done now,
// under the id the creator used, which makes an event it stored after all
// a duplicate.
func (s *Service) completeCreate(ctx context.Context, run *mesh.TaskRun) {
	unlock := s.locks.lock(run.ID)
	created := s.announceCreated(ctx, run)
	unlock()
	if created != nil {
		created.wait(ctx)
	}
}

// conflict is the 409 answer for a transition the state machine does not allow.
func conflict(run *mesh.TaskRun, format string, args ...any) error {
	e := mesh.Errorf(mesh.CodeInvalidTransition, format, args...)
	e.Status = run.Status
	return e
}

func (s *Service) leaseFromNow() *time.Time {
	t := time.Now().UTC().Add(s.cfg.Lease)
	return &t
}
