package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestWeb_ApproveAndDenyAStepTheHostAsksAbout: a run whose host asks to
// take a step the agent's policy leaves to a person shows the step (tool
// and input) on its task page with Allow and Deny; each button decides it,
// the decision is recorded on the run, which is working again, and the
// runtime asking again hears it.
func TestWeb_ApproveAndDenyAStepTheHostAsksAbout(t *testing.T) {
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.HeartbeatTimeout, c.Lease = time.Minute, time.Minute })
	agent := p.CreateAgent("Careful")
	p.Do(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"approval_policy": map[string]any{
		"rules": []map[string]any{{"match": "Bash(git push*)", "decision": "ask"}}, "default": "deny"}}, nil)
	rt, run := p.HeldRun(t, agent.ID, "ship the release")
	rc := p.RuntimeClient(t, rt)
	ask := func(id string) *meshapi.ApprovalResponse {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := rc.Approval(ctx, meshapi.ApprovalRequest{TaskRunID: run.ID, ToolUseID: id, Tool: "Bash", Input: json.RawMessage(`{"command":"git push origin v1.2"}`)})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	ask("toolu_1")

	b := newBrowser(t)
	b.signIn(p)
	b.open(p.APIBase + "/tasks/" + run.ID)
	b.waitText("#task-status", "Needs approval")
	b.waitText("#task-approval", "Bash")
	b.waitText("#task-approval-input", "git push origin v1.2")
	b.checkA11y("a task waiting for approval")
	b.shot("the host asks to push")
	b.click("#approve-step")
	b.waitText("#task-status", "Working")
	b.waitJS("no approval panel once decided", `() => document.querySelector('#task-approval').hidden`)
	if r := ask("toolu_1"); r.Decision != mesh.ApprovalAllow {
		t.Fatalf("the runtime hears %+v after Allow", r)
	}

	ask("toolu_2")
	b.waitText("#task-status", "Needs approval")
	b.click("#deny-step")
	b.waitText("#task-status", "Working")
	if r := ask("toolu_2"); r.Decision != mesh.ApprovalDeny {
		t.Fatalf("the runtime hears %+v after Deny", r)
	}
	got := p.GetTask(run.ID)
	if len(got.Approvals) != 2 || got.Approvals[0].Decision != mesh.ApprovalAllow || got.Approvals[1].Decision != mesh.ApprovalDeny ||
		got.Approvals[0].DecidedBy != "owner (web page)" {
		t.Fatalf("approvals %+v", got.Approvals)
	}
}
