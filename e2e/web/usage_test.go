package web_test

import (
	"net/http"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestWeb_AgentAndTaskPagesShowWhatWasSpent: the agent's page shows its
// budget and what its tasks spent per day, updated live when a task
// reports; the task's page shows what it spent.
func TestWeb_AgentAndTaskPagesShowWhatWasSpent(t *testing.T) {
	p := meshtest.StartPlatform(t)
	var agent mesh.Agent
	p.Do(http.MethodPost, "/agent-accounts", map[string]any{"name": "Spender",
		"budget": map[string]any{"per_run": map[string]any{"tokens": 50000}, "per_day": map[string]any{"cost_usd": 5}}}, &agent)

	b := newBrowser(t)
	b.signIn(p)
	b.open(p.APIBase + "/agents/" + agent.ID)
	b.waitText("#budget", "50,000 tokens per task, $5.00 per day")
	b.waitText("#usage-days", "No task has reported usage yet")

	rt, run := p.HeldRun(t, agent.ID, "count the words")
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "done",
		"usage": map[string]any{"input_tokens": 1234, "output_tokens": 56, "cached_tokens": 200, "cost_usd": 0.0123, "model": "claude-sonnet-4-5"}}}).
		Expect(t, http.StatusOK)
	b.waitText("#usage-days", "1,234 tokens in (200 cached), 56 out · $0.0123")
	b.checkA11y("the agent page with its usage")
	b.shot("agent usage")

	b.open(p.APIBase + "/tasks/" + run.ID)
	b.waitText("#task-usage", "1,234 tokens in (200 cached), 56 out · $0.0123 · claude-sonnet-4-5")
	b.checkA11y("the task page with what it spent")
}
