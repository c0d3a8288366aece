package gateway_test

import (
	"net/http"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestComplete_OverRESTTakesNoRuns: a completion sent over REST is
// answered with the run, which has no room for runs claimed with it, so a
// take in its body claims nothing: the next run stays pending, for the
// runtime's next pull, instead of being claimed and never told.
func TestComplete_OverRESTTakesNoRuns(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("rest-taker")
	rt := p.OnlineRuntime(t, agent.ID)
	first := p.CreateTask(agent.ID, "first")
	next := p.CreateTask(agent.ID, "next")
	if got := p.PullRun(t, agent.ID, rt.RuntimeToken); got.ID != first.ID {
		t.Fatalf("pulled %s, want the first run %s", got.ID, first.ID)
	}
	p.Report(t, first.ID, "complete", rt.RuntimeToken, map[string]any{
		"output": map[string]any{"text": "done"}, "take": 1, "key": mesh.NewID(),
	}).Expect(t, http.StatusOK)
	if got := p.GetTask(next.ID); got.Status != mesh.StatusPending || got.Attempt != 0 {
		t.Fatalf("the next run after a completion over REST that asked to take one: %s, attempt %d; want pending, never claimed", got.Status, got.Attempt)
	}
	if got := p.PullRun(t, agent.ID, rt.RuntimeToken); got.ID != next.ID {
		t.Fatalf("the next pull gave %s, want %s", got.ID, next.ID)
	}
}
