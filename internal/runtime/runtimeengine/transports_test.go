package runtimeengine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/internal/runtime/toolserver"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTransports_BothDelegateThroughTheRunsToolServer: the run's tool
// server works over either transport, because both send the operations of
// the table: a host of a run claimed over HTTP, as over NATS, lists the
// agents it may delegate to, sends one a task, follows it to its end and
// the run then completes through the same transport. Its host asks the
// agent's approval policy, over either transport, for a step the policy
// allows, one it denies and one a person decides.
func TestTransports_BothDelegateThroughTheRunsToolServer(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, longLeases)
	reviewer := p.CreateAgent("reviewer")
	attB := p.OnlineRuntime(t, reviewer.ID)
	for _, mode := range []string{runtimeengine.ModeHTTP, runtimeengine.ModeNATS} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			planner := p.CreateAgent("planner over " + mode)
			p.Do(http.MethodPatch, "/agent-accounts/"+planner.ID, map[string]any{
				"delegation": map[string]any{"agents": []string{reviewer.ID}},
				"approval_policy": map[string]any{"default": "deny", "timeout_seconds": 60, "rules": []map[string]any{
					{"match": "Read", "decision": "allow"}, {"match": "Bash(git push*)", "decision": "ask"}}},
			}, nil)
			att := p.Attach(planner.ID)
			var tr runtimeengine.Transport
			if mode == runtimeengine.ModeHTTP {
				tr = runtimeengine.NewHTTP(runtimeengine.HTTPConfig{API: p.Runtime(att.RuntimeToken), AgentID: planner.ID, PullWait: 2 * time.Second})
			} else {
				tr, _ = dialNATS(ctx, t, p.NATSURL(), att)
			}
			defer tr.Close()
			if err := tr.Heartbeat(ctx, meshapi.HeartbeatRequest{}); err != nil {
				t.Fatal(err)
			}
			parent := p.CreateTask(planner.ID, "plan")
			var run *mesh.TaskRun
			meshtest.Eventually(t, 20*time.Second, func() bool {
				got, err := tr.NextUpTo(ctx, 1)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) > 0 {
					run = got[0]
				}
				return run != nil
			}, func() string { return "the planner's run was never claimed" })
			if run.ID != parent.ID {
				t.Fatalf("claimed %s, want %s", run.ID, parent.ID)
			}

			srv, err := toolserver.Start(toolserver.Config{Platform: runtimeengine.Delegation(tr)})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = srv.Close() }()
			capability, closeRun, err := srv.Open(run.ID)
			if err != nil {
				t.Fatal(err)
			}
			defer closeRun()
			s, err := meshtest.ToolHost(t, srv.URL(), capability, toolserver.FolderHeader, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()

			out, msg := meshtest.CallTool(t, s, "list_agents", map[string]any{})
			agents, _ := out["agents"].([]any)
			if msg != "" || len(agents) != 1 || agents[0].(map[string]any)["agent_id"] != reviewer.ID {
				t.Fatalf("list_agents = %v %s, want the reviewer only", out, msg)
			}
			out, msg = meshtest.CallTool(t, s, "send_task", map[string]any{"agent_id": reviewer.ID, "text": "review the plan"})
			childID, _ := out["task_id"].(string)
			if msg != "" || childID == "" {
				t.Fatalf("send_task = %v %s", out, msg)
			}
			var child mesh.TaskRun
			meshtest.Eventually(t, 20*time.Second, func() bool {
				r := p.Pull(t, reviewer.ID, attB.RuntimeToken, "")
				if r.Status != http.StatusOK {
					return false
				}
				child = r.Run(t)
				return true
			}, func() string { return "the delegated task never reached the reviewer" })
			if child.ID != childID || child.ParentTaskRunID != run.ID {
				t.Fatalf("the reviewer got %s (parent %s), want %s of %s", child.ID, child.ParentTaskRunID, childID, run.ID)
			}
			p.Report(t, child.ID, "complete", attB.RuntimeToken, map[string]any{"output": map[string]any{"text": "approved"}}).Expect(t, http.StatusOK)
			out, msg = meshtest.CallTool(t, s, "get_task", map[string]any{"task_id": childID, "wait": true})
			if msg != "" || out["status"] != "completed" || out["text"] != "approved" {
				t.Fatalf("get_task = %v %q", out, msg)
			}

			if got := approve(t, s, "Read", map[string]any{"file_path": "plan.md"}); got.Behavior != "allow" {
				t.Fatalf("Read: %+v, want allowed by the policy", got)
			}
			if got := approve(t, s, "Bash", map[string]any{"command": "rm -rf build"}); got.Behavior != "deny" {
				t.Fatalf("Bash rm: %+v, want denied by the policy's default", got)
			}
			asked := make(chan toolserver.ApproveOutput, 1)
			go func() { asked <- approve(t, s, "Bash", map[string]any{"command": "git push origin main"}) }()
			meshtest.Eventually(t, 20*time.Second, func() bool { return p.GetTask(run.ID).Status == mesh.StatusApprovalRequired },
				func() string { return "the run never waited for approval: " + string(p.GetTask(run.ID).Status) })
			p.Do(http.MethodPost, "/task-runs/"+run.ID+"/approval", map[string]any{"decision": "allow"}, nil)
			if got := <-asked; got.Behavior != "allow" {
				t.Fatalf("Bash git push: %+v, want allowed by the person", got)
			}

			if err := tr.Complete(ctx, meshapi.CompleteRequest{TaskRunID: run.ID, Attempt: run.Attempt, Output: json.RawMessage(`{"text":"planned"}`)}); err != nil {
				t.Fatal(err)
			}
			if got := p.GetTask(run.ID); got.Status != mesh.StatusCompleted {
				t.Fatalf("the planner's run is %s after its complete, want completed", got.Status)
			}
		})
	}
}

// toolUses numbers the test's tool calls: a host names each call once.
var toolUses atomic.Int64

// approve asks the run's tool server, as Claude Code's permission prompt
// does, whether its host may take a step, and returns the answer.
func approve(t *testing.T, s *mcp.ClientSession, tool string, input map[string]any) toolserver.ApproveOutput {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "approve", Arguments: map[string]any{
		"tool_name": tool, "input": input, "tool_use_id": fmt.Sprintf("toolu_%s_%d", tool, toolUses.Add(1))}})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Errorf("approve %s: %v %+v", tool, err, res)
		return toolserver.ApproveOutput{}
	}
	var out toolserver.ApproveOutput
	text, _ := res.Content[0].(*mcp.TextContent)
	if text == nil || json.Unmarshal([]byte(text.Text), &out) != nil {
		t.Errorf("approve %s answered %+v, want the JSON of a permission result", tool, res.Content[0])
	}
	return out
}
