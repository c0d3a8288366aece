package taskqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

func usageOutput(text string, in, out, cached int64, cost float64) map[string]any {
	return map[string]any{"text": text, "usage": map[string]any{"input_tokens": in, "output_tokens": out, "cached_tokens": cached, "cost_usd": cost, "model": "m-1"}}
}

// TestUsage_LandsOnTheRunSumsPerDayAndRollsUp: the usage of an answer is
// the run's (usage and usage_total, turns added up) with a task_run.usage
// event; the agent's day sums its runs through GET /usage; a run
// delegated from inside another rolls up into the delegating run's
// usage_total, not into its own usage.
func TestUsage_LandsOnTheRunSumsPerDayAndRollsUp(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	parentAgent := p.CreateAgent("asks")
	childAgent := p.CreateAgent("helps")
	events := p.StreamEvents(t, url.Values{"agent_id": {parentAgent.ID}})

	rt, first := p.HeldRun(t, parentAgent.ID, "two turns")
	asked := p.Report(t, first.ID, "complete", rt.RuntimeToken, map[string]any{"output": usageOutput("which?", 100, 10, 40, 0.01), "input_required": true}).
		Expect(t, http.StatusOK).Run(t)
	if asked.Usage == nil || asked.Usage.InputTokens != 100 || asked.Usage.CachedTokens != 40 || asked.Usage.Model != "m-1" {
		t.Fatalf("usage after the first turn: %+v", asked.Usage)
	}
	p.Do(http.MethodPost, "/task-runs/"+first.ID+"/input", map[string]any{"text": "that one"}, nil)
	if got := p.PullRun(t, parentAgent.ID, rt.RuntimeToken); got.ID != first.ID {
		t.Fatalf("pulled %s", got.ID)
	}
	done := p.Report(t, first.ID, "complete", rt.RuntimeToken, map[string]any{"output": usageOutput("done", 200, 20, 0, 0.02)}).Expect(t, http.StatusOK).Run(t)
	if u := done.Usage; u == nil || u.InputTokens != 300 || u.OutputTokens != 30 || u.CachedTokens != 40 || u.Cost() < 0.0299 || u.Cost() > 0.0301 {
		t.Fatalf("usage of two turns: %+v", u)
	}
	if done.UsageTotal == nil || done.UsageTotal.Tokens() != 330 {
		t.Fatalf("usage_total %+v", done.UsageTotal)
	}
	evs := events.Until(t, 10*time.Second, meshtest.TypeIs(mesh.EventTaskRunCompleted, first.ID))
	usageEvents := 0
	for _, ev := range evs {
		if ev.Type == mesh.EventTaskRunUsage && ev.Subject == first.ID {
			usageEvents++
		}
	}
	if usageEvents != 2 {
		t.Errorf("%d task_run.usage events for two reports", usageEvents)
	}

	// A second run of the day, without usage, counts nothing; one with usage adds up.
	_, second := p.HeldRun(t, parentAgent.ID, "quiet")
	_ = second
	rt3, third := p.HeldRun(t, parentAgent.ID, "more")
	p.Report(t, third.ID, "complete", rt3.RuntimeToken, map[string]any{"output": usageOutput("ok", 50, 5, 0, 0.005)}).Expect(t, http.StatusOK)

	// The parent delegates from inside its work: the child's run names it.
	rtP, parent := p.HeldRun(t, parentAgent.ID, "delegate it")
	client := meshapi.NewClient(p.Conn().NC)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	child, err := client.CreateTaskRun(ctx, meshapi.CreateTaskRunRequest{TargetAgentID: childAgent.ID, Input: json.RawMessage(`{"text":"help"}`),
		InitiatorAgentID: parentAgent.ID, ParentTaskRunID: parent.ID, DelegationChain: []string{parentAgent.ID}})
	if err != nil {
		t.Fatal(err)
	}
	rtC := p.OnlineRuntime(t, childAgent.ID)
	if got := p.PullRun(t, childAgent.ID, rtC.RuntimeToken); got.ID != child.TaskRun.ID {
		t.Fatalf("child pulled %s", got.ID)
	}
	p.Report(t, child.TaskRun.ID, "complete", rtC.RuntimeToken, map[string]any{"output": usageOutput("helped", 1000, 100, 0, 0.1)}).Expect(t, http.StatusOK)
	rolled := p.WaitTask(parent.ID, 10*time.Second, func(r mesh.TaskRun) bool { return r.UsageTotal != nil })
	if rolled.Usage != nil || rolled.UsageTotal.Tokens() != 1100 {
		t.Fatalf("parent after the child: usage %+v total %+v", rolled.Usage, rolled.UsageTotal)
	}
	p.Report(t, parent.ID, "complete", rtP.RuntimeToken, map[string]any{"output": usageOutput("all done", 10, 1, 0, 0.001)}).Expect(t, http.StatusOK)
	final := p.GetTask(parent.ID)
	if final.Usage.Tokens() != 11 || final.UsageTotal.Tokens() != 1111 {
		t.Fatalf("parent at the end: usage %+v total %+v", final.Usage, final.UsageTotal)
	}

	var rep meshapi.UsageReport
	day := mesh.UsageDay(first.CreatedAt)
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/usage?agent_id=" + parentAgent.ID + "&from=" + day + "&to=" + day, Owner: true}).Expect(t, http.StatusOK).Decode(t, &rep)
	if len(rep.Days) != 1 || rep.Days[0].Runs != 3 || rep.Days[0].InputTokens != 300+50+10 || rep.Days[0].OutputTokens != 30+5+1 || rep.Total.Tokens() != 396 {
		t.Fatalf("the parent agent's day: %+v", rep)
	}
	rep = meshapi.UsageReport{}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/usage?agent_id=" + childAgent.ID, Owner: true}).Expect(t, http.StatusOK).Decode(t, &rep)
	if len(rep.Days) != 1 || rep.Days[0].Runs != 1 || rep.Total.Tokens() != 1100 {
		t.Fatalf("the child agent's day: %+v", rep)
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/usage?from=2026-13-01", Owner: true}).ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	// A report in another shape is not counted, and does not fail the answer.
	rt4, fourth := p.HeldRun(t, parentAgent.ID, "odd")
	odd := p.Report(t, fourth.ID, "complete", rt4.RuntimeToken, map[string]any{"output": map[string]any{"text": "x", "usage": map[string]any{"input_tokens": -5}}}).
		Expect(t, http.StatusOK).Run(t)
	if odd.Usage != nil {
		t.Fatalf("a negative count was recorded: %+v", odd.Usage)
	}
	// The counters hold every report the platform recorded.
	metrics := string(p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/metrics"}).Expect(t, http.StatusOK).Body)
	for _, want := range []string{`a2amesh_usage_tokens_total{kind="input"} 1360`, `a2amesh_usage_tokens_total{kind="output"} 136`,
		`a2amesh_usage_tokens_total{kind="cached"} 40`, `a2amesh_usage_cost_usd_total 0.136`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	p.ValidateStoredEvents(t)
}

// TestBudget_RefusesAtCreateAndCancelsARunThatPassesIt: a run whose turn
// passes its agent's per-run budget is canceled with BUDGET_EXCEEDED
// instead of waiting for input; a delegating run whose delegate's usage
// rolls it past its budget is canceled while it runs; once the day's
// budget is spent a create is refused with BUDGET_EXCEEDED; each time the
// owner is told by agent.budget_exceeded.
func TestBudget_RefusesAtCreateAndCancelsARunThatPassesIt(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	var agent mesh.Agent
	p.Do(http.MethodPost, "/agent-accounts", map[string]any{"name": "thrifty",
		"budget": map[string]any{"per_run": map[string]any{"tokens": 500}, "per_day": map[string]any{"cost_usd": 0.05}}}, &agent)
	if agent.Budget == nil || agent.Budget.PerRun.Tokens != 500 || agent.Budget.PerDay.CostUSD != 0.05 {
		t.Fatalf("budget %+v", agent.Budget)
	}
	p.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + agent.ID, Owner: true,
		JSON: map[string]any{"budget": map[string]any{"per_run": map[string]any{"tokens": -1}}}}).ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	helper := p.CreateAgent("helper")
	events := p.StreamEvents(t, url.Values{"agent_id": {agent.ID}})

	// A turn that passes the per-run budget: canceled, not waiting for input.
	rt, run := p.HeldRun(t, agent.ID, "expensive question")
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": usageOutput("which?", 600, 10, 0, 0.001), "input_required": true}).Expect(t, http.StatusOK)
	stopped := p.WaitTask(run.ID, 10*time.Second, func(r mesh.TaskRun) bool { return r.Status.Terminal() })
	if stopped.Status != mesh.StatusCanceled || stopped.Error == nil || stopped.Error.Code != mesh.ReasonBudgetExceeded {
		t.Fatalf("a run past its budget: %s %+v", stopped.Status, stopped.Error)
	}
	evs := events.Until(t, 10*time.Second, meshtest.TypeIs(mesh.EventAgentBudgetExceeded, agent.ID))
	var notice struct {
		Limit     string `json:"limit"`
		Action    string `json:"action"`
		TaskRunID string `json:"task_run_id"`
	}
	_ = json.Unmarshal(evs[len(evs)-1].Data, &notice)
	if notice.Limit != "per_run" || notice.Action != "canceled" || notice.TaskRunID != run.ID {
		t.Fatalf("budget notice %s", evs[len(evs)-1].Data)
	}

	// A running run rolled past its budget by its delegate: canceled while
	// it runs, and a further delegation from it is refused at create.
	_, parent := p.HeldRun(t, agent.ID, "delegate")
	client := meshapi.NewClient(p.Conn().NC)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	child, err := client.CreateTaskRun(ctx, meshapi.CreateTaskRunRequest{TargetAgentID: helper.ID, Input: json.RawMessage(`{"text":"help"}`),
		ParentTaskRunID: parent.ID, DelegationChain: []string{agent.ID}})
	if err != nil {
		t.Fatal(err)
	}
	rtH := p.OnlineRuntime(t, helper.ID)
	p.PullRun(t, helper.ID, rtH.RuntimeToken)
	p.Report(t, child.TaskRun.ID, "complete", rtH.RuntimeToken, map[string]any{"output": usageOutput("helped", 700, 0, 0, 0)}).Expect(t, http.StatusOK)
	parentEnd := p.WaitTask(parent.ID, 10*time.Second, func(r mesh.TaskRun) bool { return r.Status.Terminal() })
	if parentEnd.Status != mesh.StatusCanceled || parentEnd.Error.Code != mesh.ReasonBudgetExceeded || parentEnd.UsageTotal.Tokens() != 700 {
		t.Fatalf("the delegating run: %s %+v total %+v", parentEnd.Status, parentEnd.Error, parentEnd.UsageTotal)
	}
	_, err = client.CreateTaskRun(ctx, meshapi.CreateTaskRunRequest{TargetAgentID: helper.ID, Input: json.RawMessage(`{"text":"more"}`),
		ParentTaskRunID: parent.ID, DelegationChain: []string{agent.ID}})
	if !errors.Is(err, mesh.ErrBudgetExceeded) {
		t.Fatalf("a delegation from a run past its budget: %v", err)
	}

	// The day's budget: spent by a cheap run, then every create is refused.
	rt2, spender := p.HeldRun(t, agent.ID, "spend")
	p.Report(t, spender.ID, "complete", rt2.RuntimeToken, map[string]any{"output": usageOutput("spent", 10, 1, 0, 0.06)}).Expect(t, http.StatusOK)
	refused := p.CreateTaskWith(t, map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "one more"}})
	refused.ExpectError(t, http.StatusTooManyRequests, mesh.CodeBudgetExceeded)
	events.Until(t, 10*time.Second, func(ev meshtest.Event) bool {
		return ev.Type == mesh.EventAgentBudgetExceeded && json.Unmarshal(ev.Data, &notice) == nil && notice.Action == "refused" && notice.Limit == "per_day"
	})
	// Without limits again, the agent takes work.
	var unlimited mesh.Agent
	p.Do(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"budget": map[string]any{}}, &unlimited)
	if unlimited.Budget != nil {
		t.Fatalf("an empty budget left %+v", unlimited.Budget)
	}
	meshtest.Eventually(t, 10*time.Second, func() bool {
		return p.CreateTaskWith(t, map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "again"}}).Status == http.StatusCreated
	}, func() string { return "creates stayed refused after the budget was removed" })
	p.ValidateStoredEvents(t)
}

// TestBudget_AClaimCarriesWhatThePerRunBudgetLeaves: a runtime claiming a
// run of an agent with a per-run budget is told what the budget leaves
// the run (run_budget), for its host to stop itself at; a later turn gets
// what the earlier ones left; the run's record and events never show it.
func TestBudget_AClaimCarriesWhatThePerRunBudgetLeaves(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("bounded")
	p.Do(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"budget": map[string]any{"per_run": map[string]any{"tokens": 1000, "cost_usd": 0.5}}}, nil)
	rt := p.OnlineRuntime(t, agent.ID)
	run := p.CreateTask(agent.ID, "two turns")
	claimed := p.PullRun(t, agent.ID, rt.RuntimeToken)
	if b := claimed.RunBudget; claimed.ID != run.ID || b == nil || b.Tokens != 1000 || b.CostUSD != 0.5 {
		t.Fatalf("claimed %s with run_budget %+v, want the whole per-run budget", claimed.ID, b)
	}
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": usageOutput("which?", 300, 100, 0, 0.2), "input_required": true}).Expect(t, http.StatusOK)
	p.Do(http.MethodPost, "/task-runs/"+run.ID+"/input", map[string]any{"text": "that one"}, nil)
	again := p.PullRun(t, agent.ID, rt.RuntimeToken)
	if b := again.RunBudget; b == nil || b.Tokens != 600 || b.CostUSD < 0.2999 || b.CostUSD > 0.3001 {
		t.Fatalf("the second turn's run_budget %+v, want what the first left (600 tokens, $0.3)", b)
	}
	if got := p.GetTask(run.ID); got.RunBudget != nil {
		t.Fatalf("the run's record shows run_budget %+v", got.RunBudget)
	}
}

// TestBudget_PassingTheDaysBudgetCancelsTheAgentsOtherRuns: the report
// that passes an agent's per-day budget stops the agent's other runs of
// that day that have not ended (running or still pending), each canceled
// BUDGET_EXCEEDED with a notice; another agent's runs go on.
func TestBudget_PassingTheDaysBudgetCancelsTheAgentsOtherRuns(t *testing.T) {
	t.Parallel()
	// Leases that outlast the test: only the budget ends a run here.
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease, c.HeartbeatTimeout = time.Minute, time.Minute })
	agent := p.CreateAgent("daily")
	p.Do(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"budget": map[string]any{"per_day": map[string]any{"cost_usd": 0.05}}}, nil)
	other := p.CreateAgent("unbounded")
	events := p.StreamEvents(t, url.Values{"agent_id": {agent.ID}})

	rt := p.OnlineRuntime(t, agent.ID)
	spender := p.CreateTask(agent.ID, "spend")
	running := p.CreateTask(agent.ID, "work on")
	for range 2 {
		p.PullRun(t, agent.ID, rt.RuntimeToken)
	}
	pending := p.CreateTask(agent.ID, "later")
	_, elsewhere := p.HeldRun(t, other.ID, "not this agent's")

	p.Report(t, spender.ID, "complete", rt.RuntimeToken, map[string]any{"output": usageOutput("spent", 10, 1, 0, 0.06)}).Expect(t, http.StatusOK)
	for _, id := range []string{running.ID, pending.ID} {
		r := p.WaitTask(id, 10*time.Second, func(r mesh.TaskRun) bool { return r.Status.Terminal() })
		if r.Status != mesh.StatusCanceled || r.Error == nil || r.Error.Code != mesh.ReasonBudgetExceeded || !strings.Contains(r.Error.Message, "per-day") && !strings.Contains(r.Error.Message, "budget for") {
			t.Fatalf("run %s after the day's budget passed: %s %+v, want canceled BUDGET_EXCEEDED", id, r.Status, r.Error)
		}
	}
	// One notice for each canceled run, in whichever order they were canceled.
	unnoticed := map[string]bool{running.ID: true, pending.ID: true}
	events.Until(t, 10*time.Second, func(ev meshtest.Event) bool {
		var n struct{ Limit, Action, TaskRunID string }
		_ = json.Unmarshal(ev.Data, &struct {
			Limit     *string `json:"limit"`
			Action    *string `json:"action"`
			TaskRunID *string `json:"task_run_id"`
		}{&n.Limit, &n.Action, &n.TaskRunID})
		if ev.Type == mesh.EventAgentBudgetExceeded && n.Limit == "per_day" && n.Action == "canceled" {
			delete(unnoticed, n.TaskRunID)
		}
		return len(unnoticed) == 0
	})
	if got := p.GetTask(spender.ID); got.Status != mesh.StatusCompleted {
		t.Fatalf("the run whose report passed the budget is %s, want completed (it had ended)", got.Status)
	}
	if got := p.GetTask(elsewhere.ID); got.Status != mesh.StatusRunning {
		t.Fatalf("another agent's run is %s, want running", got.Status)
	}
}

// TestBudget_ARunCreatedAfterABudgetWasLoweredNeverStarts: a run created
// after an edit that leaves its agent's day no budget was answered is
// never handed to a runtime, even when the create was decided by a view
// of the agents that had not caught up with the edit (held here): its
// claim cancels it with BUDGET_EXCEEDED and tells the owner.
func TestBudget_ARunCreatedAfterABudgetWasLoweredNeverStarts(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("lowered")
	rt, spender := p.HeldRun(t, agent.ID, "spend")
	p.Report(t, spender.ID, "complete", rt.RuntimeToken, map[string]any{"output": usageOutput("spent", 10, 1, 0, 0.06)}).Expect(t, http.StatusOK)
	day := mesh.UsageDay(spender.CreatedAt)
	meshtest.Eventually(t, 10*time.Second, func() bool {
		var rep meshapi.UsageReport
		p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/usage?agent_id=" + agent.ID + "&from=" + day + "&to=" + day, Owner: true}).Expect(t, http.StatusOK).Decode(t, &rep)
		return rep.Total.Cost() > 0.059
	}, func() string { return "the day's usage never showed the run's spend" })
	events := p.StreamEvents(t, url.Values{"agent_id": {agent.ID}})

	resume := p.HoldAgentViews(t)
	p.Do(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"budget": map[string]any{"per_day": map[string]any{"cost_usd": 0.05}}}, nil)
	created := p.CreateTaskWith(t, map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "one more"}})
	if created.Status == http.StatusTooManyRequests {
		t.Fatal("the create was refused while the task queue's view of the agents was held: the test did not hold it")
	}
	run := created.Expect(t, http.StatusCreated).Run(t)
	resume()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	claimed, err := p.RuntimeClient(t, rt).Claim(ctx, meshapi.ClaimRequest{TaskRunID: run.ID, Attempt: 1})
	if err == nil {
		t.Fatalf("a run created after its agent's day ran out of budget was claimed: %s", claimed.Status)
	}
	if !meshapi.Unclaimable(err) {
		t.Fatalf("claim: %v, want a refusal that says the run cannot be claimed", err)
	}
	ended := p.GetTask(run.ID)
	if ended.Status != mesh.StatusCanceled || ended.Error == nil || ended.Error.Code != mesh.ReasonBudgetExceeded || ended.RuntimeID != "" {
		t.Fatalf("the run: %s %+v runtime %q, want canceled with %s and never held", ended.Status, ended.Error, ended.RuntimeID, mesh.ReasonBudgetExceeded)
	}
	var notice struct {
		Limit     string `json:"limit"`
		Action    string `json:"action"`
		TaskRunID string `json:"task_run_id"`
	}
	events.Until(t, 10*time.Second, func(ev meshtest.Event) bool {
		return ev.Type == mesh.EventAgentBudgetExceeded && json.Unmarshal(ev.Data, &notice) == nil && notice.TaskRunID == run.ID
	})
	if notice.Limit != "per_day" || notice.Action != "canceled" {
		t.Fatalf("budget notice %+v", notice)
	}
}
