package delegation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/internal/tracing"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// follow is one delegation this service is following: a delegating
// (parent) run and its delegate.
type follow struct {
	parentID string
	cancel   context.CancelFunc
	// held is true while the parent is running, held by this service: its
	// lease is renewed.
	held atomic.Bool
}

// startFollow starts following a delegated run this service holds (or
// whose delegate asked for input). A newer claim of the same run replaces
// the follower of the older one.
func (s *Service) startFollow(run *mesh.TaskRun) {
	// The A2A calls and bus requests of the delegation continue the run's
	// trace (the claim's answer names it).
	ctx, cancel := context.WithCancel(tracing.WithTraceParent(s.ctx, run.TraceParent))
	f := &follow{parentID: run.ID, cancel: cancel}
	f.held.Store(run.Status == mesh.StatusRunning)
	s.mu.Lock()
	if old := s.follows[run.ID]; old != nil {
		old.cancel()
	}
	s.follows[run.ID] = f
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.forget(f)
		if run.DelegatedTo.PartnerID != "" {
			s.followPartner(ctx, f, run)
			return
		}
		s.followAgent(ctx, f, run)
	}()
}

func (s *Service) forget(f *follow) {
	f.cancel()
	s.mu.Lock()
	if s.follows[f.parentID] == f {
		delete(s.follows, f.parentID)
	}
	s.mu.Unlock()
}

// held lists the runs whose leases this service keeps.
func (s *Service) held() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, f := range s.follows {
		if f.held.Load() {
			ids = append(ids, id)
		}
	}
	return ids
}

// followAgent hands the parent's current turn to the delegate agent (if it
// does not have it yet) and follows both runs until the parent ends or
// goes back to the queue.
func (s *Service) followAgent(ctx context.Context, f *follow, parent *mesh.TaskRun) {
	if parent.Status == mesh.StatusRunning {
		var err error
		if parent, err = s.handOver(ctx, parent); err != nil {
			if ctx.Err() == nil {
				s.failParent(parent, err)
			}
			return
		}
	}
	s.watch(ctx, f, parent)
}

// handOver makes sure the delegate has the parent's current turn: the
// first turn creates the delegate's task (an A2A message, idempotent by
// its id, so a repeat after a restart finds the same task); a later turn
// (the parent's caller answered the delegate's question) continues it.
func (s *Service) handOver(ctx context.Context, parent *mesh.TaskRun) (*mesh.TaskRun, error) {
	d := parent.DelegatedTo
	if d.TaskRunID != "" && d.Attempt == parent.Attempt {
		return parent, nil
	}
	childID := d.TaskRunID
	if childID == "" {
		if err := s.checkChain(ctx, parent); err != nil {
			return parent, err
		}
		id, err := s.sendToAgent(ctx, parent, "")
		if err != nil {
			return parent, err
		}
		childID = id
	} else {
		child, err := s.client.GetTaskRun(ctx, childID)
		if err != nil {
			return parent, err
		}
		if child.Status == mesh.StatusInputRequired {
			if _, err := s.sendToAgent(ctx, parent, childID); err != nil {
				return parent, err
			}
		}
	}
	linked, err := s.client.DelegateLink(ctx, meshapi.DelegateLinkRequest{
		TaskRunID: parent.ID, DelegatedTo: mesh.Delegation{TaskRunID: childID},
	})
	if errors.Is(err, mesh.ErrInvalidTransition) {
		// The parent ended while the delegate was being given the task
		// (canceled, past its deadline): the delegate's task goes too.
		if child, gerr := s.client.GetTaskRun(ctx, childID); gerr == nil && !child.Status.Terminal() {
			s.cancelChild(ctx, parent, child)
		}
	}
	if err != nil {
		return parent, err
	}
	return linked, nil
}

// checkChain refuses a delegation that would come back to an agent of the
// chain, or make it longer than the limit.
func (s *Service) checkChain(ctx context.Context, parent *mesh.TaskRun) error {
	return s.checkChainTo(ctx, parent, parent.DelegatedTo.AgentID)
}

// checkChainTo refuses a delegation of parent's work to target that would
// come back to an agent of the chain, or make it longer than the limit.
func (s *Service) checkChainTo(ctx context.Context, parent *mesh.TaskRun, target string) error {
	chain := append(slices.Clone(parent.DelegationChain), parent.TargetAgentID)
	if slices.Contains(chain, target) {
		return &mesh.RunError{
			Code:    mesh.ReasonDelegationLoop,
			Message: fmt.Sprintf("delegation loop refused: %s → %s, and %s is already in the delegation chain", s.describeChain(ctx, chain), s.describeAgent(ctx, target), s.describeAgent(ctx, target)),
			Details: map[string]any{"delegation_chain": chain, "target_agent_id": target},
		}
	}
	if len(chain) > s.cfg.MaxDepth {
		return &mesh.RunError{
			Code:    mesh.ReasonDelegationDepth,
			Message: fmt.Sprintf("delegation refused: the chain %s → %s would be %d hops deep, over the limit of %d", s.describeChain(ctx, chain), s.describeAgent(ctx, target), len(chain), s.cfg.MaxDepth),
			Details: map[string]any{"delegation_chain": chain, "target_agent_id": target, "max_depth": s.cfg.MaxDepth},
		}
	}
	return nil
}

func (s *Service) describeChain(ctx context.Context, chain []string) string {
	names := make([]string, len(chain))
	for i, id := range chain {
		names[i] = s.describeAgent(ctx, id)
	}
	return strings.Join(names, " → ")
}

// describeAgent names an agent for people: its name and id.
func (s *Service) describeAgent(ctx context.Context, id string) string {
	if a, err := s.agent(ctx, id); err == nil && a.Name != "" {
		return fmt.Sprintf("%q (%s)", a.Name, id)
	}
	return id
}

// watch follows the parent and its delegate, each in its agent's home
// region's event stream, until the parent ends (canceling the delegate if
// it has not ended) or goes back to the queue (a new claim follows it
// then). While a stream cannot be read (its region is down), it tries
// again, keeping the parent's lease: the delegation goes on once the
// region is back.
func (s *Service) watch(ctx context.Context, f *follow, parent *mesh.TaskRun) {
	st := &state{}
	for try := 0; ; try++ {
		if s.watchOnce(ctx, f, st, parent) || ctx.Err() != nil {
			return
		}
		wait := min(time.Duration(try+1)*time.Second, 10*time.Second)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// watchOnce follows the two runs until following is over (it reports
// true) or the runs can no longer be read (false).
func (s *Service) watchOnce(ctx context.Context, f *follow, st *state, parent *mesh.TaskRun) bool {
	childID := parent.DelegatedTo.TaskRunID
	childAgent := parent.DelegatedTo.AgentID
	runs, err := s.runs.FollowRuns(ctx, parent, &mesh.TaskRun{ID: childID, TargetAgentID: childAgent})
	if err != nil {
		s.log.Warn().Ctx(ctx).Err(err).Str("task_run_id", parent.ID).Msg("delegation not followed; trying again")
		return false
	}
	defer runs.Stop()
	// Read both runs after the follower started, so no change falls between.
	if parent, err = s.client.GetTaskRun(ctx, parent.ID); err != nil {
		return errors.Is(err, mesh.ErrNotFound)
	}
	child, err := s.client.GetTaskRun(ctx, childID)
	if err != nil {
		return errors.Is(err, mesh.ErrNotFound)
	}
	for {
		if s.step(ctx, f, st, parent, child) {
			return true
		}
		run, err := runs.NextRun(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn().Ctx(ctx).Err(err).Str("task_run_id", parent.ID).Msg("delegation no longer followed; trying again")
			}
			return false
		}
		switch {
		case run.ID == parent.ID && run.Revision > parent.Revision:
			parent = run
		case run.ID == child.ID && run.Revision > child.Revision:
			child = run
		}
	}
}

// state is what a follower remembers between steps.
type state struct {
	// progress is the delegate's last progress mirrored on the parent.
	progress *mesh.Progress
	// canceled is set once the delegate was told to cancel.
	canceled bool
}

// step acts on the two runs as they are now; it reports whether following
// is over.
func (s *Service) step(ctx context.Context, f *follow, st *state, parent, child *mesh.TaskRun) bool {
	f.held.Store(parent.Status == mesh.StatusRunning)
	switch parent.Status {
	case mesh.StatusPending:
		return true
	case mesh.StatusCompleted, mesh.StatusFailed, mesh.StatusCanceled:
		if !child.Status.Terminal() && !st.canceled {
			st.canceled = true
			s.cancelChild(ctx, parent, child)
		}
		return true
	case mesh.StatusInputRequired:
		// The parent's caller has the delegate's question; only an end of
		// the parent (canceled, deadline) matters until it answers.
		return false
	}
	if parent.DelegatedTo == nil || parent.DelegatedTo.Attempt != parent.Attempt {
		return false
	}
	switch child.Status {
	case mesh.StatusCompleted:
		s.endParent(parent, meshapi.DelegateEndRequest{Status: mesh.StatusCompleted, Output: child.Output})
	case mesh.StatusInputRequired:
		s.endParent(parent, meshapi.DelegateEndRequest{Status: mesh.StatusInputRequired, Output: child.Output})
	case mesh.StatusFailed:
		s.endParent(parent, meshapi.DelegateEndRequest{Status: mesh.StatusFailed, Error: s.delegateError(ctx, child)})
	case mesh.StatusCanceled:
		s.endParent(parent, meshapi.DelegateEndRequest{Status: mesh.StatusCanceled, Error: &mesh.RunError{
			Code: mesh.ReasonCanceled, Message: "the task delegated to " + s.describeAgent(ctx, child.TargetAgentID) + " was canceled: " + reasonOf(child),
			Details: map[string]any{"delegated_agent_id": child.TargetAgentID, "delegated_task_run_id": child.ID},
		}})
	case mesh.StatusRunning:
		if child.Progress != nil && (st.progress == nil || !child.Progress.UpdatedAt.Equal(st.progress.UpdatedAt)) {
			st.progress = child.Progress
			pctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
			_, _ = s.client.DelegateProgress(pctx, meshapi.DelegateProgressRequest{TaskRunID: parent.ID, Message: child.Progress.Message, Percent: child.Progress.Percent})
			cancel()
		}
	}
	return false
}

// delegateError is the parent's error for a delegate's failure: the
// delegate's code, its message said to come from the delegate.
func (s *Service) delegateError(ctx context.Context, child *mesh.TaskRun) *mesh.RunError {
	code, msg := mesh.ReasonTaskFailed, "the task failed"
	details := map[string]any{"delegated_agent_id": child.TargetAgentID, "delegated_task_run_id": child.ID}
	if child.Error != nil {
		code, msg = child.Error.Code, child.Error.Message
		details["delegated_error"] = child.Error
	}
	return &mesh.RunError{Code: code, Message: "delegated to " + s.describeAgent(ctx, child.TargetAgentID) + ", which failed: " + msg, Details: details}
}

func reasonOf(run *mesh.TaskRun) string {
	if run.Error != nil && run.Error.Message != "" {
		return run.Error.Message
	}
	return "no reason given"
}

// endParent ends a held run, retrying while the task queue is busy. A run
// that ended meanwhile stays as it is.
func (s *Service) endParent(parent *mesh.TaskRun, req meshapi.DelegateEndRequest) {
	req.TaskRunID = parent.ID
	for try := 0; try < 5; try++ {
		ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
		_, err := s.client.DelegateEnd(ctx, req)
		cancel()
		var me *mesh.Error
		retry := errors.Is(err, mesh.ErrUnavailable) || errors.Is(err, mesh.ErrTimeout) || errors.Is(err, mesh.ErrInternal)
		if err == nil || (errors.As(err, &me) && !retry) {
			if err != nil {
				s.log.Debug().Err(err).Str("task_run_id", parent.ID).Msg("delegated run not ended")
			}
			return
		}
		if s.sleep(time.Duration(try+1) * 200 * time.Millisecond) {
			return
		}
	}
}

// failParent ends a held run whose delegation could not be made.
func (s *Service) failParent(parent *mesh.TaskRun, err error) {
	var re *mesh.RunError
	if !errors.As(err, &re) {
		re = &mesh.RunError{Code: mesh.ReasonDelegationFailed, Message: "the task could not be delegated: " + err.Error()}
	}
	s.endParent(parent, meshapi.DelegateEndRequest{Status: mesh.StatusFailed, Error: re})
}

// sleep waits d, or less when the service stops (then it reports true).
func (s *Service) sleep(d time.Duration) bool {
	select {
	case <-s.ctx.Done():
		return true
	case <-time.After(d):
		return false
	}
}
