package delegation

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
)

// A task delegated from inside a run lives as long as the turn that asked
// for it: when the run ends (completed, failed, canceled, past its
// deadline), asks its caller for input, or goes back to the queue, the
// tasks it delegated in that turn and that are still open are canceled at
// their endpoints, as routing-rule delegations are. This service watches each
// run with open delegated tasks; the links are in its bucket, so a
// restarted service watches them again.

// turnRecheck is how often a watched run is read again even without an
// event (a missed event only delays a cancel).
const turnRecheck = 15 * time.Second

// turnWatch is the watch of one run's delegated tasks.
type turnWatch struct {
	// poke says a task was linked since the last look.
	poke chan struct{}
}

// linkChild records a task the run delegated and watches the run.
func (s *Service) linkChild(ctx context.Context, parent *mesh.TaskRun, childID, agentID, requestID string) error {
	rec := &childRecord{ParentID: parent.ID, ChildID: childID, AgentID: agentID, RequestID: requestID, Attempt: parent.Attempt, CreatedAt: time.Now().UTC()}
	if _, err := s.store.children.Create(ctx, childKey(parent.ID, childID), rec); err != nil && !errors.Is(err, mesh.ErrConflict) {
		return err
	}
	s.watchTurn(parent.ID)
	return nil
}

// sentBefore returns the task a send with this request id made already.
func (s *Service) sentBefore(ctx context.Context, parentID, requestID string) (*childRecord, error) {
	children, err := s.store.childrenOfRun(ctx, parentID)
	if err != nil {
		return nil, err
	}
	for _, c := range children {
		if c.RequestID == requestID {
			return c, nil
		}
	}
	return nil, nil
}

// watchTurn makes sure a run's delegated tasks are watched.
func (s *Service) watchTurn(parentID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.turns[parentID]; w != nil {
		select {
		case w.poke <- struct{}{}:
		default:
		}
		return
	}
	w := &turnWatch{poke: make(chan struct{}, 1)}
	s.turns[parentID] = w
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.followTurn(parentID, w)
	}()
}

// followTurn watches the run until none of its delegated tasks is open.
func (s *Service) followTurn(parentID string, w *turnWatch) {
	changed := make(chan *nats.Msg, 16)
	sub, err := s.cfg.Conn.NC.ChanSubscribe(bus.EventFilter("", string(mesh.KindTaskRun), parentID), changed)
	if err != nil {
		s.log.Error().Err(err).Str("task_run_id", parentID).Msg("delegated tasks not watched")
	} else {
		defer func() { _ = sub.Unsubscribe() }()
	}
	tick := time.NewTicker(turnRecheck)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
		open, err := s.settleTurn(ctx, parentID)
		cancel()
		if err != nil && s.ctx.Err() == nil {
			s.log.Warn().Err(err).Str("task_run_id", parentID).Msg("delegated tasks not checked")
			open = 1
		}
		if open == 0 && s.stopWatching(parentID, w) {
			return
		}
		select {
		case <-s.ctx.Done():
			return
		case <-changed:
		case <-w.poke:
		case <-tick.C:
		}
	}
}

// stopWatching forgets the watch unless a task was linked meanwhile.
func (s *Service) stopWatching(parentID string, w *turnWatch) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-w.poke:
		return false
	default:
	}
	delete(s.turns, parentID)
	return true
}

// settleTurn cancels the open tasks of the run's ended turns and returns
// how many tasks of its current turn are still open.
func (s *Service) settleTurn(ctx context.Context, parentID string) (int, error) {
	parent, err := s.client.GetTaskRun(ctx, parentID)
	if err != nil && !errors.Is(err, mesh.ErrNotFound) {
		return 0, err
	}
	children, err := s.store.childrenOfRun(ctx, parentID)
	if err != nil {
		return 0, err
	}
	open := 0
	for _, c := range children {
		if c.Settled {
			continue
		}
		if parent != nil && parent.Status == mesh.StatusRunning && parent.Attempt == c.Attempt {
			open++
			continue
		}
		child, err := s.client.GetTaskRun(ctx, c.ChildID)
		if err != nil && !errors.Is(err, mesh.ErrNotFound) {
			return 0, err
		}
		if child != nil && parent != nil && !child.Status.Terminal() {
			s.cancelChild(ctx, parent, child)
		}
		c.Settled = true
		if _, err := s.store.children.Put(ctx, childKey(c.ParentID, c.ChildID), c); err != nil {
			return 0, err
		}
	}
	return open, nil
}

// resumeTurns watches again the runs whose delegated tasks were open when
// the service stopped.
func (s *Service) resumeTurns() {
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	ks, err := keys(ctx, s.store.children.KV(), "child.*.*")
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Error().Err(err).Msg("delegated tasks could not be listed; they are watched again at the next delegation of their run")
		}
		return
	}
	seen := map[string]bool{}
	for _, k := range ks {
		parts := strings.Split(k, ".")
		if len(parts) != 3 || seen[parts[1]] {
			continue
		}
		c, _, err := s.store.children.Get(ctx, k)
		if err != nil || c.Settled {
			continue
		}
		seen[parts[1]] = true
		s.watchTurn(parts[1])
	}
}
