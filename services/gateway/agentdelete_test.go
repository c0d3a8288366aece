package gateway_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestAgents_DeleteEndsItsRunsRevokesItsRuntimesAndKeepsItsEvents: DELETE
// /agent-accounts/{id} (owner) answers what it did; the agent is gone (404
// after), its open runs are canceled with the reason "agent deleted", its
// runtimes are revoked (their token is refused), its queue consumer is
// deleted, a finished run and the events stay; without a credential it is
// 401, for an unknown agent 404, each a JSON error.
func TestAgents_DeleteEndsItsRunsRevokesItsRuntimesAndKeepsItsEvents(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("doomed")
	other := p.CreateAgent("bystander")
	rt, done := p.HeldRun(t, agent.ID, "finished before")
	p.Report(t, done.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "ok"}}).Expect(t, http.StatusOK)
	running := p.CreateTask(agent.ID, "working")
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	pending := []mesh.TaskRun{p.CreateTask(agent.ID, "waiting 1"), p.CreateTask(agent.ID, "waiting 2")}
	kept := p.CreateTask(other.ID, "not this agent's")

	p.Send(t, meshtest.Request{Method: http.MethodDelete, Path: "/agent-accounts/" + agent.ID}).ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
	p.Send(t, meshtest.Request{Method: http.MethodDelete, Path: "/agent-accounts/" + mesh.NewID(), Owner: true}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
	p.Send(t, meshtest.Request{Method: http.MethodDelete, Path: "/agent-accounts/not-an-id", Owner: true}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)

	var res meshapi.DeleteAgentResponse
	p.Send(t, meshtest.Request{Method: http.MethodDelete, Path: "/agent-accounts/" + agent.ID, Owner: true}).Expect(t, http.StatusOK).Decode(t, &res)
	if res.AgentID != agent.ID || res.RevokedRuntimes != 1 || res.CanceledTaskRuns != 3 {
		t.Fatalf("delete answered %+v, want 1 runtime revoked and 3 runs canceled", res)
	}

	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts/" + agent.ID, Owner: true}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
	p.Send(t, meshtest.Request{Method: http.MethodDelete, Path: "/agent-accounts/" + agent.ID, Owner: true}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
	meshtest.Eventually(t, 10*time.Second, func() bool {
		return p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/a2a/" + agent.ID + "/.well-known/agent-card.json"}).Status == http.StatusNotFound
	}, func() string { return "the deleted agent's A2A card is still served" })
	var list meshapi.AgentList
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts", Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
	for _, a := range list.Agents {
		if a.ID == agent.ID {
			t.Fatal("the deleted agent is still listed")
		}
	}
	p.CreateTaskWith(t, map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "too late"}}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)

	for _, r := range append([]mesh.TaskRun{running}, pending...) {
		got := p.GetTask(r.ID)
		if got.Status != mesh.StatusCanceled || got.Error == nil || !strings.Contains(got.Error.Message, "agent deleted") {
			t.Errorf("run %s after the delete: %s %+v, want canceled because the agent was deleted", r.ID, got.Status, got.Error)
		}
	}
	if got := p.GetTask(done.ID); got.Status != mesh.StatusCompleted {
		t.Errorf("the finished run is %s, want it kept completed", got.Status)
	}
	if got := p.GetTask(kept.ID); got.Status != mesh.StatusPending {
		t.Errorf("another agent's run is %s, want it untouched", got.Status)
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/heartbeat", RuntimeToken: rt.RuntimeToken, JSON: map[string]any{}}).ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)

	// Its events stay: the run created before the delete is still there.
	events := p.StreamEvents(t, url.Values{"agent_id": {agent.ID}, "since": {"1h"}})
	got := events.Until(t, 20*time.Second, func(ev meshtest.Event) bool { return ev.Subject == done.ID && ev.Type == mesh.EventTaskRunCompleted })
	if len(got) == 0 {
		t.Fatal("no events of the deleted agent")
	}
}
