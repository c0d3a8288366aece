package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestApproval_APersonDecidesTheStepARunWaitsFor: a runtime asks about a
// step its host wants to take; the agent's policy says "ask", so the run
// waits in approval-required with the step on it. POST
// /task-runs/{id}/approval decides it once: a run not waiting (409), a bad
// decision or body (400), an unknown run (404) and a caller without the
// owner's credential (401) are refused with JSON errors. The decision is
// recorded on the run, which is running again, and the runtime asking
// again hears it. A policy's allow and deny are answered at once, without
// asking; a bad policy is refused.
func TestApproval_APersonDecidesTheStepARunWaitsFor(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	var agent mesh.Agent
	p.Do(http.MethodPost, "/agent-accounts", map[string]any{"name": "careful", "approval_policy": map[string]any{
		"rules":   []map[string]any{{"match": "Bash(git push*)", "decision": "ask"}, {"match": "Read", "decision": "allow"}},
		"default": "deny", "timeout_seconds": 600,
	}}, &agent)
	if agent.ApprovalPolicy == nil || len(agent.ApprovalPolicy.Rules) != 2 {
		t.Fatalf("agent's policy %+v", agent.ApprovalPolicy)
	}
	p.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + agent.ID, Owner: true,
		JSON: map[string]any{"approval_policy": map[string]any{"rules": []map[string]any{{"match": "Bash(", "decision": "ask"}}}}}).
		ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	p.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + agent.ID, Owner: true,
		JSON: map[string]any{"approval_policy": map[string]any{"default": "perhaps"}}}).
		ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)

	rt := p.OnlineRuntime(t, agent.ID)
	run := p.CreateTask(agent.ID, "ship it")
	decide := func(id string, body any) *meshtest.Response {
		return p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + id + "/approval", Owner: true, JSON: body})
	}
	decide(run.ID, map[string]any{"decision": "allow"}).ExpectError(t, http.StatusConflict, mesh.CodeInvalidTransition)
	p.PullRun(t, agent.ID, rt.RuntimeToken)

	rc := p.RuntimeClient(t, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ask := func(id, tool string, input map[string]any) *meshapi.ApprovalResponse {
		t.Helper()
		in, _ := json.Marshal(input)
		resp, err := rc.Approval(ctx, meshapi.ApprovalRequest{TaskRunID: run.ID, ToolUseID: id, Tool: tool, Input: in})
		if err != nil {
			t.Fatalf("approval of %s: %v", tool, err)
		}
		return resp
	}
	// The policy decides these at once; the run never waits.
	if r := ask("toolu_1", "Read", map[string]any{"file_path": "go.mod"}); r.Decision != mesh.ApprovalAllow || r.Asked {
		t.Fatalf("Read: %+v", r)
	}
	if r := ask("toolu_2", "Bash", map[string]any{"command": "rm -rf /"}); r.Decision != mesh.ApprovalDeny || r.Asked || r.Reason == "" {
		t.Fatalf("Bash rm: %+v", r)
	}
	if got := p.GetTask(run.ID); got.Status != mesh.StatusRunning || len(got.Approvals) != 2 ||
		got.Approvals[0].DecidedBy != mesh.ApprovalByPolicy || got.Approvals[1].DecidedBy != mesh.ApprovalByPolicy {
		t.Fatalf("after the policy's decisions the run is %s with approvals %+v, want both decided by policy", got.Status, got.Approvals)
	}
	// "ask": the run waits, with the step on it.
	if r := ask("toolu_3", "Bash", map[string]any{"command": "git push origin main"}); r.Decision != "" {
		t.Fatalf("an asked step was decided at once: %+v", r)
	}
	waiting := p.GetTask(run.ID)
	if waiting.Status != mesh.StatusApprovalRequired || waiting.PendingApproval == nil || waiting.PendingApproval.Tool != "Bash" ||
		waiting.PendingApproval.Rule != "Bash(git push*)" || waiting.PendingApproval.ID != "toolu_3" {
		t.Fatalf("run %s pending %+v", waiting.Status, waiting.PendingApproval)
	}

	// Another step asked while this one waits is asked once it is decided.
	if r := ask("toolu_9", "Bash", map[string]any{"command": "git push --tags"}); r.Decision != "" {
		t.Fatalf("a second step was decided while the first waits: %+v", r)
	}
	if got := p.GetTask(run.ID); got.PendingApproval == nil || got.PendingApproval.ID != "toolu_3" {
		t.Fatalf("the second step replaced the first: %+v", got.PendingApproval)
	}
	decide(run.ID, map[string]any{"decision": "maybe"}).ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	decide(run.ID, map[string]any{}).ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	decide(run.ID, map[string]any{"decision": "allow", "by": "someone else"}).ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	decide(mesh.NewID(), map[string]any{"decision": "allow"}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/approval", JSON: map[string]any{"decision": "allow"}}).
		ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/approval", RuntimeToken: rt.RuntimeToken, JSON: map[string]any{"decision": "allow"}}).
		ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)

	decided := decide(run.ID, map[string]any{"decision": "allow", "reason": "release day"}).Expect(t, http.StatusOK).Run(t)
	if decided.Status != mesh.StatusRunning || decided.PendingApproval != nil || len(decided.Approvals) != 3 {
		t.Fatalf("decided run %s pending %+v approvals %+v", decided.Status, decided.PendingApproval, decided.Approvals)
	}
	if a := decided.Approvals[2]; a.Decision != mesh.ApprovalAllow || a.DecidedBy != "owner" || a.Reason != "release day" || a.DecidedAt == nil || a.ID != "toolu_3" {
		t.Fatalf("recorded decision %+v", a)
	}
	if r := ask("toolu_3", "Bash", map[string]any{"command": "git push origin main"}); r.Decision != mesh.ApprovalAllow || !r.Asked {
		t.Fatalf("the runtime asking again hears %+v", r)
	}
	decide(run.ID, map[string]any{"decision": "deny"}).ExpectError(t, http.StatusConflict, mesh.CodeInvalidTransition)

	// A run canceled while it waits: the runtime asking again hears a deny.
	if r := ask("toolu_4", "Bash", map[string]any{"command": "git push --force"}); r.Decision != "" {
		t.Fatalf("an asked step was decided at once: %+v", r)
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/cancel", Owner: true, JSON: map[string]any{}}).Expect(t, http.StatusOK)
	if r := ask("toolu_4", "Bash", map[string]any{"command": "git push --force"}); r.Decision != mesh.ApprovalDeny || !strings.Contains(r.Reason, "canceled") {
		t.Fatalf("the runtime of a canceled run hears %+v", r)
	}
	decide(run.ID, map[string]any{"decision": "allow"}).ExpectError(t, http.StatusConflict, mesh.CodeInvalidTransition)
}
