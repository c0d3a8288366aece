package taskqueue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
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
	rc := p.RuntimeClient(t, rt)
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

// TestApproval_PolicyDecisionsAreRecordedAndAnnounced: a step the policy
// allows or denies without asking is recorded on the run, decided by
// "policy" under the rule that matched, and announced by
// task_run.approval_decided; asking again about the same call answers
// from the record. A run that makes many calls keeps the last
// mesh.MaxRecordedApprovals decisions and counts them all.
func TestApproval_PolicyDecisionsAreRecordedAndAnnounced(t *testing.T) {
	t.Parallel()
	// The run is held through many calls without a renewal of its lease.
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = time.Minute })
	agent := p.CreateAgent("policed")
	p.Do(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"approval_policy": map[string]any{
		"rules":   []map[string]any{{"match": "Read", "decision": "allow"}, {"match": "Bash(rm *)", "decision": "deny"}},
		"default": "allow",
	}}, nil)
	rt := p.OnlineRuntime(t, agent.ID)
	rc := p.RuntimeClient(t, rt)
	run := p.CreateTask(agent.ID, "x")
	events := p.StreamEvents(t, url.Values{"task_run_id": {run.ID}, "since": {"1m"}})
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	ask := func(id, tool, input string) *meshapi.ApprovalResponse {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := rc.Approval(ctx, meshapi.ApprovalRequest{TaskRunID: run.ID, ToolUseID: id, Tool: tool, Input: json.RawMessage(input)})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	if resp := ask("toolu_read", "Read", `{"file_path":"go.mod"}`); resp.Decision != mesh.ApprovalAllow || resp.Asked {
		t.Fatalf("Read: %+v, want allowed without asking", resp)
	}
	if resp := ask("toolu_rm", "Bash", `{"command":"rm -rf build"}`); resp.Decision != mesh.ApprovalDeny || !strings.Contains(resp.Reason, "Bash(rm *)") {
		t.Fatalf("Bash rm: %+v, want denied by rule Bash(rm *)", resp)
	}
	if resp := ask("toolu_rm", "Bash", `{"command":"rm -rf build"}`); resp.Decision != mesh.ApprovalDeny {
		t.Fatalf("asked again: %+v, want the recorded deny", resp)
	}
	got := p.GetTask(run.ID)
	if got.Status != mesh.StatusRunning || len(got.Approvals) != 2 || got.ApprovalCount != 2 {
		t.Fatalf("run %s with %d approvals (count %d): %+v, want running with the two policy decisions", got.Status, len(got.Approvals), got.ApprovalCount, got.Approvals)
	}
	for i, want := range []struct{ id, tool, rule, decision, input string }{
		{"toolu_read", "Read", "Read", mesh.ApprovalAllow, "go.mod"},
		{"toolu_rm", "Bash", "Bash(rm *)", mesh.ApprovalDeny, "rm -rf build"},
	} {
		a := got.Approvals[i]
		if a.ID != want.id || a.Tool != want.tool || a.Rule != want.rule || a.Decision != want.decision || a.DecidedBy != mesh.ApprovalByPolicy ||
			a.DecidedAt == nil || a.RequestedAt.IsZero() || !strings.Contains(string(a.Input), want.input) {
			t.Errorf("approvals[%d] = %+v (input %s), want %s %s by policy under rule %s", i, a, a.Input, want.decision, want.tool, want.rule)
		}
	}
	if got.Approvals[1].Reason == "" {
		t.Errorf("the policy's deny has no reason: %+v", got.Approvals[1])
	}
	var decided []meshtest.Event
	events.Until(t, 10*time.Second, func(ev meshtest.Event) bool {
		if ev.Type == mesh.EventTaskRunApprovalDecided {
			decided = append(decided, ev)
		}
		return len(decided) == 2
	})
	for i, id := range []string{"toolu_read", "toolu_rm"} {
		var data mesh.TaskRun
		if err := json.Unmarshal(decided[i].Data, &data); err != nil {
			t.Fatal(err)
		}
		if last := data.Approvals[len(data.Approvals)-1]; last.ID != id || last.DecidedBy != mesh.ApprovalByPolicy {
			t.Errorf("event %d carries %+v last, want %s decided by policy", i, last, id)
		}
	}

	// Many calls: the record keeps the last ones and counts them all.
	more := mesh.MaxRecordedApprovals + 3
	for i := range more {
		if resp := ask(fmt.Sprintf("toolu_%d", i), "Grep", `{"pattern":"x"}`); resp.Decision != mesh.ApprovalAllow {
			t.Fatalf("call %d: %+v, want allowed by default", i, resp)
		}
	}
	got = p.GetTask(run.ID)
	if len(got.Approvals) != mesh.MaxRecordedApprovals || got.ApprovalCount != 2+more ||
		got.Approvals[len(got.Approvals)-1].ID != fmt.Sprintf("toolu_%d", more-1) || got.Approvals[len(got.Approvals)-1].Rule != "" {
		t.Fatalf("%d approvals kept (count %d), last %+v; want the last %d of %d", len(got.Approvals), got.ApprovalCount,
			got.Approvals[len(got.Approvals)-1], mesh.MaxRecordedApprovals, 2+more)
	}
}

// TestApproval_APolicyEditAnsweredBeforeACallDecidesIt: a tool call asked
// about after the answer to an edit of the agent's approval policy is
// decided by the edited policy, even when the task queue's view of the
// agents has not caught up with the edit by the time it is asked.
func TestApproval_APolicyEditAnsweredBeforeACallDecidesIt(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("tightened")
	p.Do(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"approval_policy": map[string]any{"default": "allow"}}, nil)
	rt := p.OnlineRuntime(t, agent.ID)
	rc := p.RuntimeClient(t, rt)
	run := p.CreateTask(agent.ID, "x")
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	asked, err := p.Conn().NC.SubscribeSync(bus.RuntimeSubject(agent.ID, rt.RuntimeID, bus.RuntimeOpApproval))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Conn().NC.Flush(); err != nil {
		t.Fatal(err)
	}

	resume := p.HoldAgentViews(t)
	p.Do(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"approval_policy": map[string]any{"default": "deny"}}, nil)
	answer := make(chan *meshapi.ApprovalResponse, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		resp, err := rc.Approval(ctx, meshapi.ApprovalRequest{TaskRunID: run.ID, ToolUseID: "toolu_1", Tool: "Bash", Input: json.RawMessage(`{"command":"ls"}`)})
		if err != nil {
			t.Error(err)
		}
		answer <- resp
	}()
	if _, err := asked.NextMsg(20 * time.Second); err != nil {
		t.Fatalf("the call was not asked: %v", err)
	}
	resume()
	if resp := <-answer; resp == nil || resp.Decision != mesh.ApprovalDeny {
		t.Fatalf("a call after the policy became deny-by-default was answered %+v, want denied", resp)
	}
}
