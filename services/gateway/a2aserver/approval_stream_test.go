package a2aserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestStreaming_ASubscriberSeesTheTasksStatesNotThePolicysDecisions: a
// subscriber of a task sees its state changes; the decisions the agent's
// approval policy makes without asking (one per tool call of the host,
// the task still working) change no state and are not streamed, as they
// are not pushed.
func TestStreaming_ASubscriberSeesTheTasksStatesNotThePolicysDecisions(t *testing.T) {
	t.Parallel()
	host := newScripted()
	d := startEndpoint(t, endpointOptions{agent: meshtest.AgentOptions{Provider: host}})
	agentID := d.agent.Agent.ID
	d.p.Do(http.MethodPatch, "/agent-accounts/"+agentID, map[string]any{"approval_policy": map[string]any{"default": "allow"}}, nil)
	c := d.client("1.0", a2a.TransportProtocolJSONRPC)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("wait policed"), Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.(*a2a.Task).ID
	meshtest.Eventually(t, 20*time.Second, func() bool {
		g, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
		return err == nil && g.Status.Message != nil && strings.Contains(g.Status.Message.Parts[0].Text(), "thinking about")
	}, func() string { return "the host's progress never showed" })

	started := make(chan struct{})
	seen := make(chan []string, 1)
	go func() {
		var rest []string
		for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}) {
			if err != nil {
				t.Errorf("subscriber: %v", err)
				break
			}
			switch v := ev.(type) {
			case *a2a.Task:
				close(started)
			case *a2a.TaskStatusUpdateEvent:
				rest = append(rest, string(v.Status.State))
			}
		}
		seen <- rest
	}()
	<-started

	// The host calls three tools; the policy allows each without asking.
	rc := meshapi.NewClient(d.p.RuntimeConn(t, d.agent.Attached)).Runtime(agentID, d.agent.Attached.RuntimeID)
	for i := range 3 {
		resp, err := rc.Approval(ctx, meshapi.ApprovalRequest{TaskRunID: string(id), ToolUseID: fmt.Sprintf("toolu_%d", i), Tool: "Read", Input: json.RawMessage(`{"file_path":"a.go"}`)})
		if err != nil || resp.Decision != mesh.ApprovalAllow {
			t.Fatalf("approval %d: %+v %v", i, resp, err)
		}
	}
	if run := d.p.GetTask(string(id)); run.ApprovalCount != 3 {
		t.Fatalf("the run recorded %d decisions, want 3", run.ApprovalCount)
	}
	host.gate <- struct{}{}
	if got := strings.Join(<-seen, ","); got != "TASK_STATE_COMPLETED" {
		t.Fatalf("the subscriber saw %s after the task, want only its completion: the policy's decisions were streamed", got)
	}
}
