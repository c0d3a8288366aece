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

// The tests here put the stores in the state a node loss leaves behind (a
// write stored whose caller never heard so, or whose next step never ran)
// and check that the next call with the same intent completes the work
// exactly once.

func lostWriteService(t *testing.T) (*Service, *mesh.Agent) {
	t.Helper()
	return serviceWithAgent(t, Config{})
}

// serviceWithAgent runs the service on one fresh server, with one agent.
func serviceWithAgent(t *testing.T, cfg Config) (*Service, *mesh.Agent) {
	t.Helper()
	s := singleService(t, cfg)
	agent := &mesh.Agent{ID: mesh.NewID(), Name: "lost writes"}
	if _, err := s.agentStore.Create(context.Background(), agent.ID, agent); err != nil {
		t.Fatal(err)
	}
	return s, agent
}

// claimKeyAsCreator stores the idempotency record a create stores first,
// naming the run id it chose.
func claimKeyAsCreator(t *testing.T, s *Service, req *meshapi.CreateTaskRunRequest, runID string) {
	t.Helper()
	rec := &idempotencyRecord{TaskRunID: runID, Fingerprint: fingerprint(req), CreatedAt: time.Now().UTC()}
	if _, err := s.idem.Create(context.Background(), idempotencyKey(req), rec); err != nil {
		t.Fatal(err)
	}
}

func lastEventType(t *testing.T, s *Service, run *mesh.TaskRun) string {
	t.Helper()
	last, err := s.events.LastType(context.Background(), run.TargetAgentID, mesh.KindTaskRun, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// TestCreate_KeyWhoseRunWasNeverStoredCreatesThatRunAndNoOther: the creator
// claimed the key and died (or timed out) before its run was known to be
// stored. The caller's retry with the key stores the run under the id the
// key names, at once; when the creator's write lands after all, it finds
// that id taken. A key never creates two runs.
func TestCreate_KeyWhoseRunWasNeverStoredCreatesThatRunAndNoOther(t *testing.T) {
	s, agent := lostWriteService(t)
	ctx := context.Background()
	req := func() *meshapi.CreateTaskRunRequest {
		return &meshapi.CreateTaskRunRequest{TargetAgentID: agent.ID, Input: []byte(`{"text":"once"}`), IdempotencyKey: "order-7", TaskType: "chat", MaxAttempts: 1}
	}
	chosen := mesh.NewID()
	claimKeyAsCreator(t, s, req(), chosen)

	res, err := s.create(ctx, req())
	if err != nil {
		t.Fatal(err)
	}
	if res.TaskRun.ID != chosen {
		t.Fatalf("the retry created run %s; the key names %s, which the first create may still store: two runs for one key", res.TaskRun.ID, chosen)
	}
	// The first create's write, landing late, is refused.
	late := &mesh.TaskRun{ID: chosen, TargetAgentID: agent.ID, Status: mesh.StatusPending, Input: []byte(`{"text":"once"}`)}
	if _, err := s.runs.Create(ctx, chosen, late); err == nil {
		t.Fatal("a second write of the key's run was stored")
	}
}

// TestCreate_RetryAnnouncesARunItsCreatorStoredAndLeft: the creator stored
// the run and died before announcing it. The caller's retry with the key
// answers with that run and announces it, and the run is offered.
func TestCreate_RetryAnnouncesARunItsCreatorStoredAndLeft(t *testing.T) {
	s, agent := lostWriteService(t)
	ctx := context.Background()
	req := func() *meshapi.CreateTaskRunRequest {
		return &meshapi.CreateTaskRunRequest{TargetAgentID: agent.ID, Input: []byte(`{"text":"once"}`), IdempotencyKey: "order-8", TaskType: "chat", MaxAttempts: 1}
	}
	run := &mesh.TaskRun{ID: mesh.NewID(), TargetAgentID: agent.ID, Status: mesh.StatusPending, MaxAttempts: 1, IdempotencyKey: "order-8"}
	claimKeyAsCreator(t, s, req(), run.ID)
	storeRun(t, s, run)

	res, err := s.create(ctx, req())
	if err != nil {
		t.Fatal(err)
	}
	if res.TaskRun.ID != run.ID || res.Created {
		t.Fatalf("retry answered run %s (created %t), want the stored %s", res.TaskRun.ID, res.Created, run.ID)
	}
	if got := lastEventType(t, s, run); got != mesh.EventTaskRunCreated {
		t.Fatalf("the run's last event is %q, want %s", got, mesh.EventTaskRunCreated)
	}
	if offers := s.offer(ctx, agent.ID, 1, 5*time.Second); len(offers) != 1 || offers[0].TaskRunID != run.ID || offers[0].Attempt != 1 {
		t.Fatalf("offered %+v after the retry, want run %s attempt 1", offers, run.ID)
	}
	// A further retry publishes nothing more.
	if _, err := s.create(ctx, req()); err != nil {
		t.Fatal(err)
	}
	if n := eventCount(t, s, run); n != 1 {
		t.Fatalf("%d events about the run, want 1", n)
	}
}

// TestTransition_RepeatedEndPublishesTheEventLostWithItsNode: a run's end
// was stored but its event was not (the event stream's leader was lost and
// the publish given up). The runtime, which never heard that its report was
// taken, reports again: the repeat changes nothing and publishes the
// missing event, once.
func TestTransition_RepeatedEndPublishesTheEventLostWithItsNode(t *testing.T) {
	s, agent := lostWriteService(t)
	ctx := context.Background()
	now := time.Now().UTC()
	run := storeRun(t, s, &mesh.TaskRun{TargetAgentID: agent.ID, Status: mesh.StatusCompleted, MaxAttempts: 1, Attempt: 1, RuntimeID: mesh.NewID(), EndedAt: &now})
	repeat := func(r *mesh.TaskRun) (string, error) {
		if r.Status == mesh.StatusCompleted {
			return "", errUnchanged
		}
		return "", conflict(r, "not the repeat this test makes")
	}
	for range 2 {
		if _, err := s.transition(ctx, run.ID, repeat); err != nil {
			t.Fatal(err)
		}
	}
	if got := lastEventType(t, s, run); got != mesh.EventTaskRunCompleted {
		t.Fatalf("the run's last event is %q, want %s", got, mesh.EventTaskRunCompleted)
	}
	if n := eventCount(t, s, run); n != 1 {
		t.Fatalf("%d events about the run, want 1", n)
	}
}

// eventCount counts the events stored about run.
func eventCount(t *testing.T, s *Service, run *mesh.TaskRun) uint64 {
	t.Helper()
	ctx := context.Background()
	stream, err := s.js.Stream(ctx, bus.EventStream)
	if err != nil {
		t.Fatal(err)
	}
	subject := bus.EventSubject(run.TargetAgentID, string(mesh.KindTaskRun), run.ID)
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}
