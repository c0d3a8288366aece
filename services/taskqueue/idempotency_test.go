package taskqueue_test

import (
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestCreate_IdempotencyKeyReturnsTheSameRun, whether the key comes in the
// body or in the Idempotency-Key header; keys are scoped to the target agent.
func TestCreate_IdempotencyKeyReturnsTheSameRun(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent, other := p.CreateAgent("target"), p.CreateAgent("other")
	body := func(agentID string) map[string]any {
		return map[string]any{"target_agent_id": agentID, "input": map[string]any{"text": "once"}}
	}

	withKey := body(agent.ID)
	withKey["idempotency_key"] = "order-42"
	first := p.CreateTaskWith(t, withKey).Expect(t, http.StatusCreated).Run(t)
	again := p.CreateTaskWith(t, withKey).Expect(t, http.StatusOK).Run(t)
	if again.ID != first.ID || again.ConversationID != first.ConversationID || again.IdempotencyKey != "order-42" {
		t.Fatalf("repeated create: %s / %s, want %s / %s", again.ID, again.ConversationID, first.ID, first.ConversationID)
	}

	header := func(b map[string]any, key string) *meshtest.Response {
		return p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs", Owner: true, JSON: b, Header: http.Header{"Idempotency-Key": {key}}})
	}
	viaHeader := header(body(agent.ID), "order-43").Expect(t, http.StatusCreated).Run(t)
	if viaHeader.ID == first.ID || viaHeader.IdempotencyKey != "order-43" {
		t.Fatalf("header key: %+v", viaHeader)
	}
	if got := header(body(agent.ID), "order-43").Expect(t, http.StatusOK).Run(t); got.ID != viaHeader.ID {
		t.Fatalf("repeated header key gave %s, want %s", got.ID, viaHeader.ID)
	}
	// The body field and the header name the same key.
	sameAsHeader := body(agent.ID)
	sameAsHeader["idempotency_key"] = "order-43"
	if got := p.CreateTaskWith(t, sameAsHeader).Expect(t, http.StatusOK).Run(t); got.ID != viaHeader.ID {
		t.Fatalf("body key after header key gave %s, want %s", got.ID, viaHeader.ID)
	}
	// The same key for a different request is refused, not answered with a
	// run the caller did not ask for.
	p.CreateTaskWith(t, map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "another"}, "idempotency_key": "order-43"}).
		ExpectError(t, http.StatusConflict, mesh.CodeIdempotencyReplay)
	// Another agent's run with the same key is another run.
	otherRun := header(body(other.ID), "order-42").Expect(t, http.StatusCreated).Run(t)
	if otherRun.ID == first.ID || otherRun.TargetAgentID != other.ID {
		t.Fatalf("same key for another agent returned %+v", otherRun)
	}
	// Without a key, every create is new.
	a := p.CreateTaskWith(t, body(agent.ID)).Expect(t, http.StatusCreated).Run(t)
	b := p.CreateTaskWith(t, body(agent.ID)).Expect(t, http.StatusCreated).Run(t)
	if a.ID == b.ID {
		t.Fatal("two creates without a key returned one run")
	}
	var list struct {
		TaskRuns []mesh.TaskRun `json:"task_runs"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?agent_id=" + agent.ID, Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.TaskRuns) != 4 {
		t.Fatalf("agent has %d runs, want 4 (two keyed, two unkeyed)", len(list.TaskRuns))
	}
}

// TestCreate_ConcurrentCreatesWithOneKeyMakeOneRun: twenty clients retrying
// the same request at once get one run between them.
func TestCreate_ConcurrentCreatesWithOneKeyMakeOneRun(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("busy")
	events := p.StreamEvents(t, url.Values{"agent_id": {agent.ID}, "type": {"task_run.created"}})
	const n = 20
	var wg sync.WaitGroup
	resps := make([]*meshtest.Response, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			h := http.Header{}
			body := map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "once"}}
			if i%2 == 0 {
				h.Set("Idempotency-Key", "burst")
			} else {
				body["idempotency_key"] = "burst"
			}
			resps[i] = p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs", Owner: true, JSON: body, Header: h})
		}()
	}
	close(start)
	wg.Wait()
	created, ids, convs := 0, map[string]bool{}, map[string]bool{}
	for i, r := range resps {
		switch r.Status {
		case http.StatusCreated:
			created++
		case http.StatusOK:
		default:
			t.Fatalf("create %d: HTTP %d %s", i, r.Status, r.Body)
		}
		run := r.Run(t)
		ids[run.ID] = true
		convs[run.ConversationID+" "+run.WorkspaceID] = true
	}
	if created != 1 || len(ids) != 1 {
		t.Fatalf("%d creates answered 201 and %d distinct runs came back, want 1 and 1", created, len(ids))
	}
	var list struct {
		TaskRuns []mesh.TaskRun `json:"task_runs"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?agent_id=" + agent.ID, Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.TaskRuns) != 1 {
		t.Fatalf("agent has %d runs after the burst, want 1", len(list.TaskRuns))
	}
	if len(convs) != 1 {
		t.Fatalf("the answers name %d conversations and workspaces for one run: %v", len(convs), convs)
	}
	ev := events.Next(t, 5*time.Second)
	marker := p.CreateTask(agent.ID, "marker")
	if next := events.Next(t, 5*time.Second); next.Subject != marker.ID {
		t.Fatalf("a second created event (%s) followed the burst's %s", next.Subject, ev.Subject)
	}
	// The one run is claimable exactly once.
	rt := p.OnlineRuntime(t, agent.ID)
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	p.Pull(t, agent.ID, rt.RuntimeToken, "").Expect(t, http.StatusNoContent)
}

// TestReport_RepeatedEndReportsAreNoOps: a runtime retrying complete (its
// first answer was lost) gets 200 and the run is unchanged; a second complete
// with other output cannot overwrite the first.
func TestReport_RepeatedEndReportsAreNoOps(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("retrying")
	rt := p.OnlineRuntime(t, agent.ID)
	done, failed := p.CreateTask(agent.ID, "complete me"), p.CreateTask(agent.ID, "fail me")
	events := p.StreamEvents(t, url.Values{"agent_id": {agent.ID}})
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	p.PullRun(t, agent.ID, rt.RuntimeToken)

	first := p.Report(t, done.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "first"}}).Expect(t, http.StatusOK).Run(t)
	for _, body := range []map[string]any{
		{"output": map[string]any{"text": "first"}},
		{"attempt": 1, "output": map[string]any{"text": "first"}},
		{"output": map[string]any{"text": "second"}},
	} {
		again := p.Report(t, done.ID, "complete", rt.RuntimeToken, body).Expect(t, http.StatusOK).Run(t)
		if again.Revision != first.Revision || string(again.Output) != string(first.Output) || !again.EndedAt.Equal(*first.EndedAt) {
			t.Fatalf("repeated complete %v changed the run: revision %d→%d, output %s→%s", body, first.Revision, again.Revision, first.Output, again.Output)
		}
	}
	if got := p.GetTask(done.ID); string(got.Output) != `{"text":"first"}` {
		t.Fatalf("stored output %s, want the first", got.Output)
	}
	// Failing a completed run is a conflict, not a no-op.
	p.Report(t, done.ID, "fail", rt.RuntimeToken, map[string]any{"output": map[string]any{"error": "late"}}).ExpectError(t, http.StatusConflict, mesh.CodeInvalidTransition)

	firstFail := p.Report(t, failed.ID, "fail", rt.RuntimeToken, map[string]any{"output": map[string]any{"error": "boom", "code": "E1"}}).Expect(t, http.StatusOK).Run(t)
	againFail := p.Report(t, failed.ID, "fail", rt.RuntimeToken, map[string]any{"output": map[string]any{"error": "other", "code": "E2"}}).Expect(t, http.StatusOK).Run(t)
	if againFail.Revision != firstFail.Revision || againFail.Error.Code != "E1" {
		t.Fatalf("repeated fail changed the run: %+v", againFail.Error)
	}
	p.Report(t, failed.ID, "complete", rt.RuntimeToken, nil).ExpectError(t, http.StatusConflict, mesh.CodeInvalidTransition)

	// One completed and one failed event, nothing for the repeats.
	marker := p.CreateTask(agent.ID, "marker")
	evs := events.Until(t, 5*time.Second, meshtest.TypeIs("task_run.created", marker.ID))
	ends := map[string]int{}
	for _, ev := range evs {
		if ev.Type == mesh.EventTaskRunCompleted || ev.Type == mesh.EventTaskRunFailed {
			ends[ev.Subject+" "+ev.Type]++
		}
	}
	if len(ends) != 2 || ends[done.ID+" "+mesh.EventTaskRunCompleted] != 1 || ends[failed.ID+" "+mesh.EventTaskRunFailed] != 1 {
		t.Fatalf("end events: %v", ends)
	}
}
