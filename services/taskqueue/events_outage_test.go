package taskqueue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go/jetstream"
)

// TestCreate_EventOfAStoredRunOutlastsAnEventStreamOutage: a run stored
// while the event stream cannot take its event for longer than a store
// call's retry budget (its node lost, its leader elected under load) still
// gets its event once the stream is back: the change is stored, so its
// event is never given up on while a retry is still a duplicate.
func TestCreate_EventOfAStoredRunOutlastsAnEventStreamOutage(t *testing.T) {
	s := singleService(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	agent := &mesh.Agent{ID: mesh.NewID(), Name: "announced"}
	if _, err := s.agentStore.Create(ctx, agent.ID, agent); err != nil {
		t.Fatal(err)
	}
	if err := s.js.DeleteStream(ctx, bus.EventStream); err != nil {
		t.Fatal(err)
	}
	type created struct {
		res *meshapi.CreateTaskRunResponse
		err error
	}
	done := make(chan created, 1)
	go func() {
		res, err := s.create(ctx, &meshapi.CreateTaskRunRequest{TargetAgentID: agent.ID, Input: []byte(`{"text":"hi"}`)})
		done <- created{res, err}
	}()
	// The outage lasts longer than the retry budget of one store call.
	<-time.After(bus.RetryBudget + 2*time.Second)
	if err := bus.Provision(ctx, s.js, bus.ProvisionConfig{}); err != nil {
		t.Fatal(err)
	}
	var res created
	select {
	case res = <-done:
	case <-ctx.Done():
		t.Fatal("create never returned")
	}
	if res.err != nil {
		t.Fatalf("create: %v", res.err)
	}
	id := res.res.TaskRun.ID
	stream, err := s.js.Stream(ctx, bus.EventStream)
	if err != nil {
		t.Fatal(err)
	}
	// Once the create has answered, its event is stored or on its way.
	ctx, cancel = context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var found bool
	for !found {
		msg, err := stream.GetLastMsgForSubject(ctx, bus.EventSubject(agent.ID, string(mesh.KindTaskRun), id))
		switch {
		case err == nil:
			found = bus.EventType(msg.Header) == mesh.EventTaskRunCreated
		case errors.Is(err, jetstream.ErrMsgNotFound) && ctx.Err() == nil:
			<-time.After(20 * time.Millisecond)
		default:
			t.Fatalf("the created event of run %s was never stored: %v", id, err)
		}
	}
}
