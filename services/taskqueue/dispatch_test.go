package taskqueue

import (
	"context"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// offeredIDs is the run ids of offers.
func offeredIDs(offers []meshapi.Offer) []string {
	var ids []string
	for _, o := range offers {
		ids = append(ids, o.TaskRunID)
	}
	return ids
}

// waitIndexed waits until the service's index holds run in the given status.
func waitIndexed(t *testing.T, s *Service, runID string, status mesh.Status) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.index.mu.RLock()
		sum, ok := s.index.byID[runID]
		s.index.mu.RUnlock()
		if ok && sum.status == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s never reached the index as %s", runID, status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOffer_OldestFirstAndNotTwiceWhileHeld: pending runs are offered
// oldest first; a run this copy offered is not offered again while its
// claim may still come, and is offered again once the hold ends unclaimed
// (the runtime that was offered it went away).
func TestOffer_OldestFirstAndNotTwiceWhileHeld(t *testing.T) {
	t.Parallel()
	s, agent := serviceWithAgent(t, Config{OfferHold: time.Second})
	ctx := context.Background()
	var runs []*mesh.TaskRun
	for range 3 {
		res, err := s.create(ctx, &meshapi.CreateTaskRunRequest{TargetAgentID: agent.ID, Input: []byte(`{"text":"x"}`), TaskType: "chat"})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, &res.TaskRun)
	}
	got := s.offer(ctx, agent.ID, 2, 0)
	if ids := offeredIDs(got); len(ids) != 2 || ids[0] != runs[0].ID || ids[1] != runs[1].ID {
		t.Fatalf("offered %v, want the two oldest %s %s", ids, runs[0].ID, runs[1].ID)
	}
	if got[0].Attempt != 1 {
		t.Fatalf("offered attempt %d, want 1", got[0].Attempt)
	}
	// Held: the next offer names the third only.
	if ids := offeredIDs(s.offer(ctx, agent.ID, 3, 0)); len(ids) != 1 || ids[0] != runs[2].ID {
		t.Fatalf("offered %v while the first two are held, want only %s", ids, runs[2].ID)
	}
	// Nothing claimed them: once the hold ends they are offered again,
	// to a request that was already waiting.
	began := time.Now()
	again := offeredIDs(s.offer(ctx, agent.ID, 3, 5*time.Second))
	if len(again) == 0 || again[0] != runs[0].ID {
		t.Fatalf("offered %v after the hold, want %s first", again, runs[0].ID)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Fatalf("an unclaimed run was offered again %s after the hold began, want about 1s", d)
	}
	// A run that is no longer pending is never offered again.
	if _, err := s.cancel(ctx, runs[0].ID, "not wanted"); err != nil {
		t.Fatal(err)
	}
	for _, id := range offeredIDs(s.offer(ctx, agent.ID, 3, 2*time.Second)) {
		if id == runs[0].ID {
			t.Fatalf("the canceled run %s was offered", id)
		}
	}
}

// TestOffer_RunStoredWithoutItsEventWaitsForIt: a pending run whose event
// is not stored yet (another copy stored the run, its event is on its way)
// is held back, so its claimed event can never be stored first; once its
// creator is taken for dead (repairSettle), the run is offered, after its
// created event is published late.
func TestOffer_RunStoredWithoutItsEventWaitsForIt(t *testing.T) {
	t.Parallel()
	s, agent := lostWriteService(t)
	ctx := context.Background()
	stored := time.Now().UTC().Add(-repairSettle + 1500*time.Millisecond)
	run := storeRun(t, s, &mesh.TaskRun{TargetAgentID: agent.ID, Status: mesh.StatusPending, MaxAttempts: 1, CreatedAt: stored, UpdatedAt: stored})
	waitIndexed(t, s, run.ID, mesh.StatusPending)
	if got := s.offer(ctx, agent.ID, 1, 0); len(got) != 0 {
		t.Fatalf("offered %v before the run's event was stored or its creator taken for dead", offeredIDs(got))
	}
	got := s.offer(ctx, agent.ID, 1, 5*time.Second)
	if ids := offeredIDs(got); len(ids) != 1 || ids[0] != run.ID {
		t.Fatalf("offered %v, want %s once its creator is taken for dead", ids, run.ID)
	}
	if settled := time.Since(stored); settled < repairSettle {
		t.Fatalf("offered %s after it was stored, before repairSettle (%s)", settled, repairSettle)
	}
	if last := lastEventType(t, s, run); last != mesh.EventTaskRunCreated {
		t.Fatalf("the run was offered with last event %q, want its created event published first", last)
	}
}

// TestOffer_StopAnswersTheWaitingAtOnce: a copy that stops ends the offer
// requests waiting in it, so their runtimes ask again (another copy).
func TestOffer_StopAnswersTheWaitingAtOnce(t *testing.T) {
	t.Parallel()
	s, agent := lostWriteService(t)
	done := make(chan time.Duration, 1)
	go func() {
		began := time.Now()
		s.offer(context.Background(), agent.ID, 1, 30*time.Second)
		done <- time.Since(began)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.index.mu.RLock()
		_, waiting := s.index.woken[agent.ID]
		s.index.mu.RUnlock()
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the offer never waited")
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.Stop(5 * time.Second)
	select {
	case d := <-done:
		if d > 10*time.Second {
			t.Fatalf("the waiting offer ended %s after it began, want at the stop", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the waiting offer did not end when the service stopped")
	}
}
