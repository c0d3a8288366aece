package taskqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestInputRequired_ContinueRequeuesTheSameRun: a complete report with
// input_required parks the run in input-required with the question; continue
// puts the same run back to pending with the next turn's input, the runtime
// claims it again, and it completes. Continue of a run that is not waiting
// is a conflict naming its status.
func TestInputRequired_ContinueRequeuesTheSameRun(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("asker")
	rt := p.OnlineRuntime(t, agent.ID)
	client := meshapi.NewClient(p.Conn().NC)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	events := p.StreamEvents(t, url.Values{"agent_id": {agent.ID}})

	run := p.CreateTask(agent.ID, "book a table")
	// Not waiting for input yet: continue is refused, the run unchanged.
	var me *mesh.Error
	if _, err := client.ContinueTaskRun(ctx, meshapi.ContinueTaskRunRequest{TaskRunID: run.ID, Input: json.RawMessage(`{"text":"four"}`)}); !errors.As(err, &me) || me.Code != mesh.CodeInvalidTransition || me.Status != mesh.StatusPending {
		t.Fatalf("continue of a pending run: %v", err)
	}
	if got := p.PullRun(t, agent.ID, rt.RuntimeToken); got.ID != run.ID {
		t.Fatalf("pulled %s", got.ID)
	}
	asked := p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{
		"output": map[string]any{"text": "For how many?"}, "input_required": true,
	}).Expect(t, http.StatusOK).Run(t)
	if asked.Status != mesh.StatusInputRequired || asked.EndedAt != nil || string(asked.Output) != `{"text":"For how many?"}` {
		t.Fatalf("after the question: %s ended %v output %s", asked.Status, asked.EndedAt, asked.Output)
	}
	// The runtime holds nothing while the run waits: its reports are refused.
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "late"}}).
		ExpectError(t, http.StatusConflict, mesh.CodeInvalidTransition)

	// Bad input is refused before anything changes.
	if _, err := client.ContinueTaskRun(ctx, meshapi.ContinueTaskRunRequest{TaskRunID: run.ID, Input: json.RawMessage(`"four"`)}); !errors.As(err, &me) || me.Code != mesh.CodeInvalidRequest {
		t.Fatalf("continue with a non-object input: %v", err)
	}
	next, err := client.ContinueTaskRun(ctx, meshapi.ContinueTaskRunRequest{TaskRunID: run.ID, Input: json.RawMessage(`{"text":"four","history":[{"role":"user","text":"book a table"},{"role":"agent","text":"For how many?"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if next.Status != mesh.StatusPending || next.Output != nil || next.RuntimeID != "" || next.InputText() != "four" {
		t.Fatalf("continued run: %+v", next)
	}
	again := p.PullRun(t, agent.ID, rt.RuntimeToken)
	if again.ID != run.ID || again.ConversationID != run.ConversationID || again.InputText() != "four" || again.Attempt != asked.Attempt+1 {
		t.Fatalf("second turn claimed as %s (conversation %s, input %s, attempt %d)", again.ID, again.ConversationID, again.Input, again.Attempt)
	}
	done := p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "booked for four"}}).Expect(t, http.StatusOK).Run(t)
	if done.Status != mesh.StatusCompleted {
		t.Fatalf("after the second turn: %s", done.Status)
	}

	evs := events.Until(t, 5*time.Second, meshtest.TypeIs("task_run.completed", run.ID))
	var types []string
	for _, ev := range evs {
		if ev.Subject == run.ID {
			types = append(types, ev.Type)
		}
	}
	want := []string{mesh.EventTaskRunCreated, mesh.EventTaskRunClaimed, mesh.EventTaskRunInputRequired, mesh.EventTaskRunRequeued, mesh.EventTaskRunClaimed, mesh.EventTaskRunCompleted}
	if len(types) != len(want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("events %v, want %v", types, want)
		}
	}
}
