package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestWebhooks_APushTellsTheTasksStatesNotThePolicysDecisions: an A2A
// push subscription tells its task's state changes; the decisions the
// agent's approval policy makes without asking (one per tool call of the
// host, the run still working) are no state change and are not pushed,
// while a CloudEvents subscription gets every one of them.
func TestWebhooks_APushTellsTheTasksStatesNotThePolicysDecisions(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, fastRetries)
	agent := p.CreateAgent("policed")
	p.Do(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"approval_policy": map[string]any{"default": "allow"}}, nil)
	rt := p.OnlineRuntime(t, agent.ID)
	run := p.CreateTask(agent.ID, "many tools")
	var mu sync.Mutex
	var states []string
	push := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Task struct {
				Status struct {
					State string `json:"state"`
				} `json:"status"`
			} `json:"task"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		states = append(states, body.Task.Status.State)
		mu.Unlock()
	}))
	t.Cleanup(push.Close)
	pushed := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), states...)
	}
	events := newReceiver(t, "", func(int) int { return http.StatusOK })
	subscribe(t, p, map[string]any{"url": push.URL, "format": meshapi.WebhookFormatA2A, "agent_id": agent.ID, "task_run_id": run.ID})
	subscribe(t, p, map[string]any{"url": events.URL, "agent_id": agent.ID, "task_run_id": run.ID})

	p.PullRun(t, agent.ID, rt.RuntimeToken)
	rc := p.RuntimeClient(t, rt)
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := rc.Approval(ctx, meshapi.ApprovalRequest{TaskRunID: run.ID, ToolUseID: fmt.Sprintf("toolu_%d", i), Tool: "Read", Input: json.RawMessage(`{"file_path":"a.go"}`)})
		cancel()
		if err != nil || resp.Decision != mesh.ApprovalAllow {
			t.Fatalf("approval %d: %+v %v", i, resp, err)
		}
	}
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "done"}}).Expect(t, http.StatusOK)

	decided := func() int {
		n := 0
		for _, d := range events.deliveries() {
			if d.typ == mesh.EventTaskRunApprovalDecided {
				n++
			}
		}
		return n
	}
	meshtest.Eventually(t, 20*time.Second, func() bool { return decided() == 3 && len(events.deliveries()) == 5 },
		func() string { return fmt.Sprintf("cloudevents deliveries %+v", events.deliveries()) })
	// The task's states in order, the completed one last: working
	// (claimed), then completed, and nothing for the policy's decisions.
	meshtest.Eventually(t, 20*time.Second, func() bool {
		got := pushed()
		return len(got) > 0 && got[len(got)-1] == "TASK_STATE_COMPLETED"
	}, func() string { return fmt.Sprintf("pushes %q", pushed()) })
	if got := strings.Join(pushed(), ","); got != "TASK_STATE_WORKING,TASK_STATE_COMPLETED" {
		t.Fatalf("pushes %s, want working then completed: the policy's decisions were pushed", got)
	}
}
