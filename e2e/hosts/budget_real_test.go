package hosts_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/fakemodel"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestRealClaude_StopsItselfAtTheRunsBudget: the agent's per-run cost
// budget reaches Claude Code as --max-budget-usd, so the host stops
// mid-run: the model's first answer (a shell command, and a million
// input tokens, which Claude Code prices in dollars) spends more than the
// budget, and Claude Code stops there: the command does not run and the
// model is asked nothing more. The run fails BUDGET_EXCEEDED with what
// Claude Code spent on its record, counted against the agent's budgets,
// and the owner is told.
func TestRealClaude_StopsItselfAtTheRunsBudget(t *testing.T) {
	t.Parallel()
	l := newRealLab(t, "claude")
	l.start(t)
	p := l.p
	marks := t.TempDir()
	expensive := fakemodel.Usage{Input: 1_000_000, Output: 1000}
	l.model.SetRespond(func(r *fakemodel.Request) fakemodel.Reply {
		if !r.Contains("@@budget@@") || len(r.Tools()) == 0 {
			return l.respond(r)
		}
		if r.AfterToolResult() {
			return fakemodel.Reply{Text: "Second step done.", Usage: &expensive}
		}
		return fakemodel.Reply{Text: "First step.", Tool: l.host.shell("touch " + filepath.Join(marks, "first")), Usage: &expensive}
	})
	p.Do(http.MethodPatch, "/agent-accounts/"+l.agent.ID, map[string]any{"budget": map[string]any{"per_run": map[string]any{"cost_usd": 0.5}}}, nil)

	events := p.StreamEvents(t, url.Values{"agent_id": {l.agent.ID}, "since": {"1m"}})
	run := p.CreateTask(l.agent.ID, "@@budget@@ Do the two steps.")
	done := p.WaitTask(run.ID, waitHost, func(r mesh.TaskRun) bool { return r.Status.Terminal() })
	if done.Status == mesh.StatusCompleted {
		t.Fatalf("the run completed (output %s): Claude Code did not stop at the budget", done.Output)
	}
	if done.Status != mesh.StatusFailed || done.Error == nil || done.Error.Code != mesh.ReasonBudgetExceeded || !strings.Contains(done.Error.Message, "budget") {
		t.Fatalf("run %s: error %+v, want BUDGET_EXCEEDED with Claude Code's stop at the budget", done.Status, done.Error)
	}
	if u := done.Usage; u == nil || u.InputTokens < int64(expensive.Input) || u.Cost() <= 0.5 {
		t.Fatalf("usage %+v, want what Claude Code spent (over the $0.5 budget) on the record", u)
	}
	notice := events.Until(t, waitHost, meshtest.TypeIs(mesh.EventAgentBudgetExceeded, l.agent.ID))
	if data := string(notice[len(notice)-1].Data); !strings.Contains(data, done.ID) || !strings.Contains(data, `"per_run"`) {
		t.Fatalf("budget notice %s, want the run and its per-run limit", data)
	}
	if _, err := os.Stat(filepath.Join(marks, "first")); err == nil {
		t.Fatal("the command of the answer that passed the budget ran")
	}
	for _, r := range l.model.Requests() {
		if r.Contains("@@budget@@") && r.AfterToolResult() {
			t.Fatal("Claude Code asked the model again after passing the budget")
		}
	}
	t.Logf("run %s: %s %+v", done.ID, done.Status, done.Error)
}
