package taskqueue

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
)

// sameStripe returns the id of a run whose lock is the stripe of id's.
func sameStripe(id string) string {
	for {
		other := mesh.NewID()
		if other != id && stripeOf(other) == stripeOf(id) {
			return other
		}
	}
}

// lastEvents reads the types of the events stored about a run, oldest
// first, once the last one is want (or fails the test after a while).
func lastEvents(t *testing.T, s *Service, run *mesh.TaskRun, want string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		stream, err := s.js.Stream(ctx, bus.EventStream)
		if err == nil {
			var msg *jetstream.RawStreamMsg
			msg, err = stream.GetLastMsgForSubject(ctx, bus.EventSubject(run.TargetAgentID, string(mesh.KindTaskRun), run.ID))
			if err == nil && bus.EventType(msg.Header) == want {
				return storedTypes(t, s, run)
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("the %s event of run %s was never stored: %v", want, run.ID, err)
		}
		<-time.After(20 * time.Millisecond)
	}
}

// storedTypes lists the types of a run's stored events in stream order,
// checking that their revisions rise.
func storedTypes(t *testing.T, s *Service, run *mesh.TaskRun) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := s.js.Stream(ctx, bus.EventStream)
	if err != nil {
		t.Fatal(err)
	}
	subject := bus.EventSubject(run.TargetAgentID, string(mesh.KindTaskRun), run.ID)
	var types []string
	var rev, seq uint64
	for {
		msg, err := stream.GetMsg(ctx, seq+1, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return types
		}
		if err != nil {
			t.Fatal(err)
		}
		seq = msg.Sequence
		got, err := bus.TaskRunOf(msg.Header, msg.Data)
		if err != nil {
			t.Fatal(err)
		}
		if got.Revision <= rev {
			t.Fatalf("run %s: event of revision %d stored after revision %d", run.ID, got.Revision, rev)
		}
		rev = got.Revision
		types = append(types, bus.EventType(msg.Header))
	}
}

// TestTransition_FailingEventPublishesHoldNoLockAndNoCaller: while the event
// stream cannot take events, a change is stored and its caller answered as
// soon as its context ends, another run sharing its lock stripe is not held
// meanwhile, and every event is published, in order, once the stream is back.
func TestTransition_FailingEventPublishesHoldNoLockAndNoCaller(t *testing.T) {
	s := singleService(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := storeRun(t, s, &mesh.TaskRun{Status: mesh.StatusPending})
	b := storeRun(t, s, &mesh.TaskRun{ID: sameStripe(a.ID), TargetAgentID: a.TargetAgentID, Status: mesh.StatusPending})
	c := storeRun(t, s, &mesh.TaskRun{TargetAgentID: a.TargetAgentID, Status: mesh.StatusPending})
	if err := s.js.DeleteStream(ctx, bus.EventStream); err != nil {
		t.Fatal(err)
	}

	type answer struct {
		run  *mesh.TaskRun
		err  error
		took time.Duration
	}
	cancelRun := func(id string) <-chan answer {
		done := make(chan answer, 1)
		go func() {
			rctx, rcancel := context.WithTimeout(ctx, time.Second)
			defer rcancel()
			start := time.Now()
			run, err := s.cancel(rctx, id, "")
			done <- answer{run, err, time.Since(start)}
		}()
		return done
	}
	doneA := cancelRun(a.ID)
	// Run a is canceled in the store: its event is what is failing now.
	for {
		got, _, err := s.runs.Get(ctx, a.ID)
		if err == nil && got.Status == mesh.StatusCanceled {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("run a never canceled")
		}
		<-time.After(5 * time.Millisecond)
	}
	doneB := cancelRun(b.ID)
	for name, done := range map[string]<-chan answer{"a": doneA, "b": doneB} {
		select {
		case res := <-done:
			if res.err != nil || res.run.Status != mesh.StatusCanceled {
				t.Fatalf("cancel of run %s: %v, %+v", name, res.err, res.run)
			}
			if res.took > 3*time.Second {
				t.Fatalf("cancel of run %s took %s with a context of 1s", name, res.took)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("cancel of run %s is still held after 5s (its context ended after 1s)", name)
		}
	}

	// Several changes of one run while events fail: stored at once,
	// published in order later.
	steps := []struct {
		event string
		apply func(r *mesh.TaskRun)
	}{
		{mesh.EventTaskRunClaimed, func(r *mesh.TaskRun) { r.Status, r.Attempt = mesh.StatusRunning, 1 }},
		{mesh.EventTaskRunProgress, func(r *mesh.TaskRun) { r.Progress = &mesh.Progress{Message: "one"} }},
		{mesh.EventTaskRunProgress, func(r *mesh.TaskRun) { r.Progress = &mesh.Progress{Message: "two"} }},
		{mesh.EventTaskRunCompleted, func(r *mesh.TaskRun) { r.Status = mesh.StatusCompleted }},
	}
	for i, step := range steps {
		rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		start := time.Now()
		_, err := s.transition(rctx, c.ID, func(r *mesh.TaskRun) (string, error) {
			step.apply(r)
			return step.event, nil
		})
		rcancel()
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("step %d took %s with a context of 200ms", i, took)
		}
	}

	if err := bus.Provision(ctx, s.js, bus.ProvisionConfig{}); err != nil {
		t.Fatal(err)
	}
	for _, run := range []*mesh.TaskRun{a, b} {
		if got := lastEvents(t, s, run, mesh.EventTaskRunCanceled); fmt.Sprint(got) != fmt.Sprint([]string{mesh.EventTaskRunCanceled}) {
			t.Fatalf("run %s: events %v", run.ID, got)
		}
	}
	want := []string{mesh.EventTaskRunClaimed, mesh.EventTaskRunProgress, mesh.EventTaskRunProgress, mesh.EventTaskRunCompleted}
	if got := lastEvents(t, s, c, mesh.EventTaskRunCompleted); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("run %s: events %v, want %v", c.ID, got, want)
	}
}
