package taskqueue

import (
	"context"

	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go/jetstream"
)

// waitQueued waits until run has a queue message, failing after limit.
func waitQueued(t *testing.T, s *Service, run *mesh.TaskRun, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		ok, err := s.queued(ctx, run)
		cancel()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s has no queue message after %s (last error %v)", run.ID, limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRepair_RequeuesAPendingRunWithoutMessageHoweverOld: a run that has
// been pending for ten minutes without a queue message, whose original
// message id JetStream still remembers (the message was taken and lost), is
// queued again under a fresh id.
func TestRepair_RequeuesAPendingRunWithoutMessageHoweverOld(t *testing.T) {
	s := singleService(t, Config{RepairInterval: 100 * time.Millisecond})
	ctx := context.Background()
	old := time.Now().Add(-10 * time.Minute).UTC()
	run := storeRun(t, s, &mesh.TaskRun{Status: mesh.StatusPending, MaxAttempts: 1, CreatedAt: old, UpdatedAt: old})
	// The message the run's creation published, taken off the queue since:
	// its id stays in JetStream's duplicate window.
	if err := s.enqueue(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := s.queue.Purge(ctx, jetstream.WithPurgeSubject(queueSubject(run))); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.queued(ctx, run); ok {
		t.Fatal("the purged message is still there")
	}
	waitQueued(t, s, run, 5*time.Second)
}

// TestRepair_RetriesAFailedEnqueueUntilItSucceeds: a run whose queue
// message could not be published at creation is queued as soon as the
// queue takes messages again, without waiting for the periodic repair.
func TestRepair_RetriesAFailedEnqueueUntilItSucceeds(t *testing.T) {
	s := singleService(t, Config{RepairInterval: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	agent := &mesh.Agent{ID: mesh.NewID(), Name: "patient"}
	if _, err := s.agentStore.Create(ctx, agent.ID, agent); err != nil {
		t.Fatal(err)
	}
	// A full queue refuses new messages.
	cfg := s.queue.CachedInfo().Config
	full := cfg
	full.MaxMsgs, full.Discard = 1, jetstream.DiscardNew
	if _, err := s.js.UpdateStream(ctx, full); err != nil {
		t.Fatal(err)
	}
	filler := bus.QueueSubject(mesh.NewID(), mesh.NewID())
	if _, err := s.js.Publish(ctx, filler, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	created, err := s.create(ctx, &meshapi.CreateTaskRunRequest{TargetAgentID: agent.ID, Input: []byte(`{"text":"hi"}`)})
	if err != nil {
		t.Fatal(err)
	}
	run := &created.TaskRun
	if ok, _ := s.queued(ctx, run); ok {
		t.Fatal("a full queue took the message")
	}
	// Room again.
	if err := s.queue.Purge(ctx, jetstream.WithPurgeSubject(filler)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	waitQueued(t, s, run, 3*time.Second)
}
