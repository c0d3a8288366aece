package gateway_test

import (
	"net/http"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestConfinement_RuntimeCannotTouchAnotherAgentsWork checks design §7: a
// runtime reaches only its own agent's work over HTTP, whatever route it uses.
func TestConfinement_RuntimeCannotTouchAnotherAgentsWork(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agentA, agentB := p.CreateAgent("a"), p.CreateAgent("b")
	rtA, rtB := p.OnlineRuntime(t, agentA.ID), p.OnlineRuntime(t, agentB.ID)
	runB := p.CreateTask(agentB.ID, "b's work")
	pendingB := p.CreateTask(agentB.ID, "b's queued work")
	if got := p.PullRun(t, agentB.ID, rtB.RuntimeToken); got.ID != runB.ID {
		t.Fatalf("b pulled %s, want %s", got.ID, runB.ID)
	}

	cases := []struct {
		name string
		req  meshtest.Request
	}{
		{"pull", meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts/" + agentB.ID + "/task-runs/pull"}},
		{"long-poll pull", meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts/" + agentB.ID + "/task-runs/pull?wait=5s"}},
		{"heartbeat as b", meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/heartbeat", JSON: map[string]any{"agent_id": agentB.ID}}},
		{"progress", meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + runB.ID + "/progress", JSON: map[string]any{"message": "mine now"}}},
		{"renew", meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + runB.ID + "/renew", JSON: map[string]any{}}},
		{"complete", meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + runB.ID + "/complete", JSON: map[string]any{"output": map[string]any{"text": "stolen"}}}},
		{"complete with attempt", meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + runB.ID + "/complete", JSON: map[string]any{"attempt": 1, "output": map[string]any{}}}},
		{"fail", meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + runB.ID + "/fail", JSON: map[string]any{"output": map[string]any{"error": "sabotage"}}}},
		{"artifact", meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + runB.ID + "/artifacts", JSON: map[string]any{"filename": "x.txt", "content_text": "planted"}}},
		{"complete pending", meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + pendingB.ID + "/complete", JSON: map[string]any{"output": map[string]any{}}}},
		{"artifact on pending", meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + pendingB.ID + "/artifacts", JSON: map[string]any{"filename": "x.txt", "content_text": "planted"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.RuntimeToken = rtA.RuntimeToken
			p.Send(t, tc.req).ExpectError(t, http.StatusForbidden, mesh.CodeForbidden)
		})
	}

	got := p.GetTask(runB.ID)
	if got.Status != mesh.StatusRunning || got.RuntimeID != rtB.RuntimeID || got.Progress != nil || len(got.Artifacts) != 0 {
		t.Fatalf("b's run after a's attempts: %+v, want running for b's runtime, untouched", got)
	}
	if got := p.GetTask(pendingB.ID); got.Status != mesh.StatusPending {
		t.Fatalf("b's pending run is %s after a's attempts", got.Status)
	}
	// b's runtime still owns its work.
	p.Report(t, runB.ID, "complete", rtB.RuntimeToken, map[string]any{"output": map[string]any{"text": "ok"}}).Expect(t, http.StatusOK)
	if got := p.PullRun(t, agentB.ID, rtB.RuntimeToken); got.ID != pendingB.ID {
		t.Fatalf("b pulled %s, want its queued run %s", got.ID, pendingB.ID)
	}
}
