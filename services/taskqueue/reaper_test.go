package taskqueue_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestReaper_ARunWhoseAgentIsGoneEnds: a run left open for an agent that
// no longer exists (created by a copy whose view still held the agent
// after its delete had listed the agent's open runs; here its record is
// deleted under the run) is canceled as deleting the agent cancels its
// runs, not left pending for ever: no runtime of a deleted agent can
// take it (design §3, "No orphans").
func TestReaper_ARunWhoseAgentIsGoneEnds(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("gone")
	kept := p.CreateAgent("kept")
	run := p.CreateTask(agent.ID, "x")
	other := p.CreateTask(kept.ID, "y")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	agents, err := bus.OpenRecords[mesh.Agent](ctx, p.Conn().JS, bus.BucketAgents)
	if err != nil {
		t.Fatal(err)
	}
	if err := agents.Delete(ctx, agent.ID, 0); err != nil {
		t.Fatal(err)
	}
	ended := p.WaitTask(run.ID, 10*time.Second, func(r mesh.TaskRun) bool { return r.Status.Terminal() })
	if ended.Status != mesh.StatusCanceled || ended.Error == nil || ended.Error.Code != mesh.ReasonCanceled || ended.Error.Message != mesh.AgentDeletedMessage {
		t.Fatalf("the run of the deleted agent: %s %+v", ended.Status, ended.Error)
	}
	if got := p.GetTask(other.ID); got.Status != mesh.StatusPending {
		t.Fatalf("the run of an agent that exists is %s", got.Status)
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts/" + agent.ID, Owner: true}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
}
