package taskqueue_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/meshtest"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestApproval_ARunWhoseRuntimeIsLostWhileItWaitsIsReaped: a run waiting
// in approval-required whose runtime stops renewing its lease is not
// left waiting for ever: with attempts left it goes back to pending
// without the step it asked about, and without, it fails RUNTIME_LOST.
func TestApproval_ARunWhoseRuntimeIsLostWhileItWaitsIsReaped(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = testLease; c.HeartbeatTimeout = 30 * time.Second })
	agent := p.CreateAgent("asking")
	p.Do(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"approval_policy": map[string]any{"default": "ask"}}, nil)
	rt := p.OnlineRuntime(t, agent.ID)
	rc := meshapi.NewClient(p.RuntimeConn(t, rt)).Runtime(agent.ID, rt.RuntimeID)
	for _, attempts := range []int{2, 1} {
		run := p.CreateTaskWith(t, map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "x"}, "max_attempts": attempts}).
			Expect(t, http.StatusCreated).Run(t)
		p.PullRun(t, agent.ID, rt.RuntimeToken)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := rc.Approval(ctx, meshapi.ApprovalRequest{TaskRunID: run.ID, ToolUseID: "toolu_1", Tool: "Bash", Input: json.RawMessage(`{"command":"ls"}`)})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if got := p.GetTask(run.ID); got.Status != mesh.StatusApprovalRequired {
			t.Fatalf("the run is %s, want approval-required", got.Status)
		}
		reaped := p.WaitTask(run.ID, testLease+5*time.Second, meshtest.StatusIs(mesh.StatusPending, mesh.StatusFailed))
		switch {
		case attempts == 2 && (reaped.Status != mesh.StatusPending || reaped.PendingApproval != nil || reaped.RuntimeID != ""):
			t.Fatalf("with an attempt left: %s, pending approval %+v, runtime %q", reaped.Status, reaped.PendingApproval, reaped.RuntimeID)
		case attempts == 1 && (reaped.Status != mesh.StatusFailed || reaped.Error == nil || reaped.Error.Code != mesh.ReasonRuntimeLost):
			t.Fatalf("without an attempt left: %s, error %+v", reaped.Status, reaped.Error)
		}
		if attempts == 2 {
			p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/cancel", Owner: true, JSON: map[string]any{}}).Expect(t, http.StatusOK)
		}
	}
}
