package taskqueue

import (
	"context"
	"errors"
	"testing"

	"github.com/a2amesh/a2amesh/mesh"
)

// TestTransition_AllowsExactlyTheMovesOfTheStateMachine: whatever a
// mutation asks for, transition stores a change of status only when the
// table in package mesh allows it, and refuses every other with
// INVALID_TRANSITION naming the current status, leaving the run as it was.
func TestTransition_AllowsExactlyTheMovesOfTheStateMachine(t *testing.T) {
	s := singleService(t, Config{})
	ctx := context.Background()
	for _, from := range mesh.AllStatuses() {
		for _, to := range mesh.AllStatuses() {
			if from == to {
				continue
			}
			run := storeRun(t, s, &mesh.TaskRun{Status: from, MaxAttempts: 1})
			_, err := s.transition(ctx, run.ID, func(r *mesh.TaskRun) (string, error) {
				r.Status = to
				return "", nil
			})
			stored, _, gerr := s.runs.Get(ctx, run.ID)
			if gerr != nil {
				t.Fatal(gerr)
			}
			if mesh.CanTransition(from, to) {
				if err != nil || stored.Status != to {
					t.Errorf("%s -> %s: %v, stored %s; want the move made", from, to, err, stored.Status)
				}
				continue
			}
			var e *mesh.Error
			if !errors.As(err, &e) || e.Code != mesh.CodeInvalidTransition || e.Status != from {
				t.Errorf("%s -> %s: %v; want INVALID_TRANSITION with status %s", from, to, err, from)
			}
			if stored.Status != from {
				t.Errorf("%s -> %s refused but stored %s", from, to, stored.Status)
			}
		}
	}
}
