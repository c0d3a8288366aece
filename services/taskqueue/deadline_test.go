package taskqueue_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestDeadline_PendingRunOfAnAgentWithNoRuntimeFails: a run nobody can take
// still ends (design §3, "Deadlines bound every run").
func TestDeadline_PendingRunOfAnAgentWithNoRuntimeFails(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("absent")
	run := p.CreateTaskWith(t, map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "x"}, "timeout_seconds": 1}).
		Expect(t, http.StatusCreated).Run(t)
	if run.Deadline == nil || run.Deadline.Sub(run.CreatedAt).Round(10*time.Millisecond) != time.Second {
		t.Fatalf("deadline %v for a run created at %v with timeout_seconds 1", run.Deadline, run.CreatedAt)
	}
	failed := p.WaitTask(run.ID, 4*time.Second, meshtest.StatusIs(mesh.StatusFailed))
	if failed.Error == nil || failed.Error.Code != mesh.ReasonDeadlineExceeded || failed.Attempt != 0 || failed.RuntimeID != "" {
		t.Fatalf("expired run: %+v", failed)
	}
	if failed.EndedAt == nil || failed.EndedAt.Before(*run.Deadline) {
		t.Fatalf("run failed at %v, before its deadline %v", failed.EndedAt, run.Deadline)
	}
	// A runtime that comes along afterwards is not handed the dead run.
	rt := p.OnlineRuntime(t, agent.ID)
	p.Pull(t, agent.ID, rt.RuntimeToken, "1s").Expect(t, http.StatusNoContent)
	if got := p.GetTask(run.ID); got.Status != mesh.StatusFailed || got.Attempt != 0 {
		t.Fatalf("after a pull: %s attempt %d", got.Status, got.Attempt)
	}
}

// TestDeadline_BoundsARunningRunEvenWhileItsLeaseIsRenewed: renewing the
// lease does not let a run outlive its deadline.
func TestDeadline_BoundsARunningRunEvenWhileItsLeaseIsRenewed(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = 10 * time.Second })
	agent := p.CreateAgent("slow")
	rt := p.OnlineRuntime(t, agent.ID)
	deadline := time.Now().Add(1500 * time.Millisecond).UTC()
	run := p.CreateTaskWith(t, map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "x"}, "deadline": deadline}).
		Expect(t, http.StatusCreated).Run(t)
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	p.Report(t, run.ID, "renew", rt.RuntimeToken, nil).Expect(t, http.StatusOK)
	failed := p.WaitTask(run.ID, 5*time.Second, meshtest.StatusIs(mesh.StatusFailed))
	if failed.Error == nil || failed.Error.Code != mesh.ReasonDeadlineExceeded || failed.Attempt != 1 {
		t.Fatalf("run past its deadline: %+v", failed)
	}
	if failed.EndedAt.Before(deadline) {
		t.Fatalf("ended at %v, before the deadline %v", failed.EndedAt, deadline)
	}
	p.Report(t, run.ID, "complete", rt.RuntimeToken, nil).ExpectError(t, http.StatusConflict, mesh.CodeInvalidTransition)
}
