package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestLifecycle_AttachHeartbeatPullProgressComplete walks seed 001 §4 end to
// end over HTTP and watches the run's events arrive in order on SSE.
func TestLifecycle_AttachHeartbeatPullProgressComplete(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("lifecycle")
	rt := p.Attach(agent.ID)
	if rt.AgentID != agent.ID || !mesh.ValidID(rt.RuntimeID) {
		t.Fatalf("attach answered agent %q runtime %q", rt.AgentID, rt.RuntimeID)
	}

	// Not online before the first heartbeat, online after it.
	if v := p.WaitRuntimeView(t, agent.ID, rt.RuntimeID, meshtest.Listed); v.Status != mesh.PresenceOffline || v.State != mesh.RuntimeActive {
		t.Fatalf("before heartbeat: status %s state %s, want offline active", v.Status, v.State)
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/heartbeat", RuntimeToken: rt.RuntimeToken,
		JSON: map[string]any{"agent_id": agent.ID}}).Expect(t, http.StatusOK)
	v := p.RuntimeView(t, agent.ID, rt.RuntimeID)
	if v.Status != mesh.PresenceOnline || v.LastHeartbeatAt == nil || v.DeviceName != "test-device" {
		t.Fatalf("after heartbeat: %+v, want online with a heartbeat time and the device name", v)
	}

	run := p.CreateTaskWith(t, map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "hello"}}).
		Expect(t, http.StatusCreated).Run(t)
	if run.Status != mesh.StatusPending || run.Attempt != 0 || run.ConversationID == "" || run.WorkspaceID == "" {
		t.Fatalf("created run: %+v, want pending, attempt 0, with a conversation and workspace", run)
	}
	events := p.StreamEvents(t, url.Values{"task_run_id": {run.ID}, "since": {"1m"}})

	pulled := p.PullRun(t, agent.ID, rt.RuntimeToken)
	if pulled.ID != run.ID || pulled.Status != mesh.StatusRunning || pulled.Attempt != 1 || pulled.RuntimeID != rt.RuntimeID {
		t.Fatalf("pulled: id %s status %s attempt %d runtime %s", pulled.ID, pulled.Status, pulled.Attempt, pulled.RuntimeID)
	}
	if pulled.LeaseExpiresAt == nil || pulled.InputText() != "hello" {
		t.Fatalf("pulled run lacks a lease or its input: %+v", pulled)
	}

	p.Report(t, run.ID, "progress", rt.RuntimeToken, map[string]any{"message": "halfway", "percent": 50}).Expect(t, http.StatusOK)
	got := p.GetTask(run.ID)
	if got.Progress == nil || got.Progress.Message != "halfway" || got.Progress.Percent == nil || *got.Progress.Percent != 50 {
		t.Fatalf("progress on GET: %+v, want halfway / 50", got.Progress)
	}

	done := p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "world"}}).
		Expect(t, http.StatusOK).Run(t)
	got = p.GetTask(run.ID)
	for _, r := range []mesh.TaskRun{done, got} {
		var out struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(r.Output, &out)
		if r.Status != mesh.StatusCompleted || out.Text != "world" || r.EndedAt == nil || r.Error != nil {
			t.Fatalf("completed run: status %s output %s ended %v error %+v", r.Status, r.Output, r.EndedAt, r.Error)
		}
	}

	evs := events.Until(t, 10*time.Second, meshtest.TypeIs("task_run.completed", run.ID))
	want := []string{"task_run.created", "task_run.claimed", "task_run.progress", "task_run.completed"}
	if len(evs) != len(want) {
		t.Fatalf("events: got %d (%v), want %v", len(evs), evTypes(evs), want)
	}
	var lastSeq string
	for i, ev := range evs {
		if ev.Type != "dev.a2amesh."+want[i] || ev.Subject != run.ID || ev.AgentID != agent.ID {
			t.Fatalf("event %d: %s about %s (agent %s), want %s about %s", i, ev.Type, ev.Subject, ev.AgentID, want[i], run.ID)
		}
		if ev.SpecVersion != "1.0" || ev.DataContentType != "application/json" || ev.SSEID == "" {
			t.Fatalf("event %d is not a well-formed CloudEvent: %s", i, ev.Raw)
		}
		if ev.Sequence <= lastSeq {
			t.Fatalf("event %d sequence %q does not follow %q", i, ev.Sequence, lastSeq)
		}
		lastSeq = ev.Sequence
	}
	var completed mesh.TaskRun
	if err := json.Unmarshal(evs[3].Data, &completed); err != nil || completed.Status != mesh.StatusCompleted {
		t.Fatalf("completed event data: %s (%v)", evs[3].Data, err)
	}
}

func evTypes(evs []meshtest.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}
