package taskqueue

import (
	"context"
	"errors"
	"fmt"
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
// whatever the mutation asked for.
func (s *Service) transition(ctx context.Context, runID string, m mutation) (*mesh.TaskRun, error) {
	if !mesh.ValidID(runID) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "task run %q not found", runID)
	}
	unlock := s.locks.lock(runID)
	defer unlock()
	for attempt := 0; ; attempt++ {
		run, rev, cached := s.recent.get(runID)
		if !cached || attempt > 0 {
			var err error
			if run, rev, err = s.runs.Get(ctx, runID); errors.Is(err, mesh.ErrNotFound) {
				return nil, mesh.Errorf(mesh.CodeNotFound, "task run %s not found", runID)
			} else if err != nil {
				return nil, err
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
				s.announceLate(ctx, run, mesh.TaskRunEventType(run.Status))
			}
			return run, nil
		}
		if err != nil {
			return nil, err
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
			return nil, fmt.Errorf("update task run %s: %w", runID, err)
		}
		run.Revision = next
		s.recent.put(run, next)
		s.runView.Apply(runID, run, next)
		if eventType != "" {
			s.publishRun(ctx, eventType, run)
		}
		return run, nil
	}
}

// moves reports whether a mutation is a move of the state machine: it
// changes the status, or announces entering one (a second cancel of a
// canceled run is a move from canceled to canceled, which is refused).
func moves(from, to mesh.Status, eventType string) bool {
	return from != to || eventType == mesh.TaskRunEventType(to) || eventType == mesh.EventTaskRunRequeued
}

// Publishing a stored change's event is given more time than a store call:
// the change cannot be taken back, and every try carries the same event id,
// so each is a duplicate of any that was stored after all (without an
// acknowledgement) as long as the tries stay inside the stream's duplicate
// window.
const (
	eventBudget = bus.DuplicateWindow / 2
	// eventTryTimeout bounds one try: a publish whose stream leader was lost
	// is never acknowledged, and must not use up the budget.
	eventTryTimeout = 2 * time.Second
)

// publishRun announces a run's change. The change is already stored, so a
// failure to publish is retried through leader elections of the event
// stream (see eventBudget) and then logged.
func (s *Service) publishRun(ctx context.Context, eventType string, run *mesh.TaskRun) {
	ctx = inRunTrace(ctx, run)
	ev := bus.Event{
		Type:     eventType,
		Kind:     mesh.KindTaskRun,
		AgentID:  run.TargetAgentID,
		Subject:  run.ID,
		ID:       fmt.Sprintf("%s.%d", run.ID, run.Revision),
		Sequence: run.Revision,
		Data:     run.Public(),
		Time:     run.UpdatedAt,
	}
	var err error
	deadline := time.Now().Add(eventBudget)
	for try := 1; ; try++ {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), eventTryTimeout)
		err = s.events.Publish(tctx, ev)
		cancel()
		if err == nil {
			return
		}
		if (try >= 3 && !bus.Transient(err)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(min(time.Duration(try)*50*time.Millisecond, 500*time.Millisecond))
	}
	s.cfg.Logger.Error().Err(err).Str("task_run_id", run.ID).Str("type", eventType).Msg("task run event not published")
}

// announceLate publishes the event announcing run's present state (of type
// want) when the newest event stored about the run is another: the change
// was stored but its event was lost with a node, or with the process that
// stored it. The event carries the id the first publish would have had (run
// id and revision), so one that was stored after all is a duplicate.
func (s *Service) announceLate(ctx context.Context, run *mesh.TaskRun, want string) {
	last, err := s.events.LastType(ctx, run.TargetAgentID, mesh.KindTaskRun, run.ID)
	if err != nil {
		s.cfg.Logger.Warn().Err(err).Str("task_run_id", run.ID).Msg("could not check the run's last event")
		return
	}
	if last == want {
		return
	}
	s.cfg.Logger.Warn().Str("task_run_id", run.ID).Str("type", want).Str("last", last).Msg("run stored without its event; publishing it now")
	s.publishRun(ctx, want, run)
}

// announceCreated publishes the created event of a never-claimed run when
// no event about the run was stored at all (its creator stored the run and
// failed, or died, before announcing it), and reports whether it did.
func (s *Service) announceCreated(ctx context.Context, run *mesh.TaskRun) bool {
	if run.Status != mesh.StatusPending || run.Attempt != 0 {
		return false
	}
	last, err := s.events.LastType(ctx, run.TargetAgentID, mesh.KindTaskRun, run.ID)
	if err != nil || last != "" {
		return false
	}
	s.cfg.Logger.Warn().Str("task_run_id", run.ID).Msg("run stored without its created event; publishing it now")
	s.publishRun(ctx, mesh.EventTaskRunCreated, run)
	return true
}

// completeCreate finishes the create of a run that an idempotent retry
// found stored: if its creator did not announce it, it did not queue it
// either (it announces first), so both are done now, under the ids the
// creator used, which makes anything it stored after all a duplicate.
func (s *Service) completeCreate(ctx context.Context, run *mesh.TaskRun) {
	if s.announceCreated(ctx, run) {
		s.enqueueOrRetry(ctx, run)
	}
}

// conflict is the 409 answer for a transition the state machine does not allow.
func conflict(run *mesh.TaskRun, format string, args ...any) error {
	e := mesh.Errorf(mesh.CodeInvalidTransition, format, args...)
	e.Status = run.Status
	return e
}

// holds reports whether runtimeID holds the given attempt of run (attempt 0
// means "whatever attempt it holds", for simple HTTP runtimes).
func holds(run *mesh.TaskRun, runtimeID string, attempt int) bool {
	return run.RuntimeID == runtimeID && (attempt == 0 || attempt == run.Attempt)
}

// checkHeld explains why a runtime may not report on run.
func checkHeld(run *mesh.TaskRun, agentID, runtimeID string, attempt int) error {
	if run.TargetAgentID != agentID {
		return mesh.Errorf(mesh.CodeForbidden, "task run %s belongs to another agent", run.ID)
	}
	if run.Status == mesh.StatusRunning && !holds(run, runtimeID, attempt) {
		e := mesh.Errorf(mesh.CodeStaleAttempt, "task run %s attempt %d is not held by this runtime (current attempt %d)", run.ID, attempt, run.Attempt)
		e.Status = run.Status
		return e
	}
	if run.Status != mesh.StatusRunning {
		return conflict(run, "task run %s is %s", run.ID, run.Status)
	}
	return nil
}

func (s *Service) leaseFromNow() *time.Time {
	t := time.Now().UTC().Add(s.cfg.Lease)
	return &t
}
