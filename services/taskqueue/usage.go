package taskqueue

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Usage (docs/usage.md): a run's host reports what it spent with its
// answer (output.usage); the task queue adds it to the run (usage, and
// usage_total up the delegation tree), counts it per agent and day in the
// index, and holds the agent's budgets against both.

// usageKey names one agent's day.
type usageKey struct{ agent, day string }

// dayUsage is what one agent's runs of one day spent.
type dayUsage struct {
	runs  int
	usage *mesh.Usage
}

// maxRollUpHops bounds the walk up a delegation tree; chains are shorter
// (the delegation depth limit), this only guards against a broken link.
const maxRollUpHops = 32

// count adds (sign 1) or takes away (sign -1) a run's own usage from its
// agent's day. Call it with ix.mu held.
func (ix *index) count(s *summary, sign int) {
	if s.usage.Empty() {
		return
	}
	k := usageKey{s.agentID, s.day}
	d := ix.spent[k]
	if d == nil {
		d = &dayUsage{usage: &mesh.Usage{}}
		ix.spent[k] = d
	}
	u := s.usage
	d.runs += sign
	d.usage.InputTokens += int64(sign) * u.InputTokens
	d.usage.OutputTokens += int64(sign) * u.OutputTokens
	d.usage.CachedTokens += int64(sign) * u.CachedTokens
	if u.CostUSD != nil {
		c := d.usage.Cost() + float64(sign)*(*u.CostUSD)
		d.usage.CostUSD = &c
	}
	if d.runs <= 0 {
		delete(ix.spent, k)
	}
}

// daySpent returns what an agent's runs of day spent.
func (ix *index) daySpent(agentID, day string) *mesh.Usage {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if d := ix.spent[usageKey{agentID, day}]; d != nil {
		u := *d.usage
		return &u
	}
	return &mesh.Usage{}
}

// totals returns the days of agentID (every agent when empty) between from
// and to (inclusive, YYYY-MM-DD; empty is open), by day then agent.
func (ix *index) totals(agentID, from, to string) []mesh.UsageTotal {
	ix.mu.RLock()
	out := []mesh.UsageTotal{}
	for k, d := range ix.spent {
		if agentID != "" && k.agent != agentID || from != "" && k.day < from || to != "" && k.day > to {
			continue
		}
		out = append(out, mesh.UsageTotal{AgentID: k.agent, Day: k.day, Runs: d.runs, Usage: *d.usage})
	}
	ix.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Day != out[j].Day {
			return out[i].Day < out[j].Day
		}
		return out[i].AgentID < out[j].AgentID
	})
	return out
}

func (s *Service) handleUsage(ctx context.Context, in *meshapi.UsageRequest) (*meshapi.UsageReport, error) {
	for name, day := range map[string]string{"from": in.From, "to": in.To} {
		if _, err := time.Parse(time.DateOnly, day); day != "" && err != nil {
			return nil, mesh.Errorf(mesh.CodeInvalidRequest, "%s must be a day (YYYY-MM-DD)", name)
		}
	}
	if in.AgentID != "" && !mesh.ValidID(in.AgentID) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "agent %q not found", in.AgentID)
	}
	days := s.index.totals(in.AgentID, in.From, in.To)
	sum := &mesh.Usage{}
	for _, d := range days {
		sum = sum.Plus(&d.Usage)
	}
	sum.Model = ""
	return &meshapi.UsageReport{Days: days, Total: *sum}, nil
}

// usageOf reads the usage an answer reports. One the platform cannot read
// is left out (and logged) rather than refusing the answer: the run did
// its work, and its runtime would only send the same report again.
func (s *Service) usageOf(runID string, output []byte) *mesh.Usage {
	u, err := mesh.OutputUsage(output)
	if err != nil {
		s.cfg.Logger.Warn().Err(err).Str("task_run_id", runID).Msg("the answer's usage is not in the documented shape; not counted")
		return nil
	}
	if u.Empty() {
		return nil
	}
	return u
}

// usageRecorded follows up a run whose own usage just grew by delta (its
// task_run.usage event was queued with the change): the counters, the
// budgets, and the roll-up into the runs that delegated it.
func (s *Service) usageRecorded(ctx context.Context, run *mesh.TaskRun, delta *mesh.Usage) {
	s.countUsage(delta)
	s.enforceBudget(ctx, run)
	s.rollUp(ctx, run, delta)
}

// rollUp adds delta to the usage_total of every run above run in its
// delegation tree, each change a task_run.usage event, and holds each
// one's agent's per-run budget against its new total.
func (s *Service) rollUp(ctx context.Context, run *mesh.TaskRun, delta *mesh.Usage) {
	parentID := run.ParentTaskRunID
	for hops := 0; parentID != "" && hops < maxRollUpHops; hops++ {
		parent, err := s.transition(ctx, parentID, func(r *mesh.TaskRun) (string, error) {
			r.UsageTotal = r.UsageTotal.Plus(delta)
			return mesh.EventTaskRunUsage, nil
		})
		if err != nil {
			// A parent kept in another region is not rolled up into.
			s.cfg.Logger.Warn().Err(err).Str("task_run_id", run.ID).Str("parent_task_run_id", parentID).Msg("could not roll the run's usage up into the run that delegated it")
			return
		}
		s.enforceRunBudget(ctx, parent)
		parentID = parent.ParentTaskRunID
	}
}

// budgetOf returns an agent's budget, nil when it has none.
func (s *Service) budgetOf(agentID string) *mesh.Budget {
	if a, ok := s.agents.Get(agentID); ok {
		return a.Budget
	}
	return nil
}

// checkBudget refuses a run its agent's budget leaves no room for: the
// agent's runs of the day have spent the per-day budget, or the run is
// delegated from inside a run whose tree has spent its agent's per-run
// budget.
func (s *Service) checkBudget(ctx context.Context, run *mesh.TaskRun) error {
	if n := s.dayBudgetSpent(run); n != nil {
		n.Action, n.Message = "refused", n.Message+": no new runs until the next day (UTC) or a larger budget"
		s.tellBudget(ctx, *n)
		return mesh.Errorf(mesh.CodeBudgetExceeded, "%s", n.Message)
	}
	if run.ParentTaskRunID == "" {
		return nil
	}
	parent, ok := s.recentOrStored(ctx, run.ParentTaskRunID)
	if !ok {
		return nil
	}
	if b := s.budgetOf(parent.TargetAgentID); b != nil && b.PerRun != nil {
		if why := b.PerRun.Reached(parent.UsageTotal); why != "" {
			msg := fmt.Sprintf("task run %s, which delegates this one, has spent its agent's per-run budget (%s)", parent.ID, why)
			s.tellBudget(ctx, budgetNotice{AgentID: parent.TargetAgentID, Limit: "per_run", Budget: *b.PerRun, Spent: *parent.UsageTotal, TaskRunID: parent.ID, Action: "refused", Message: msg})
			return mesh.Errorf(mesh.CodeBudgetExceeded, "%s", msg)
		}
	}
	return nil
}

// dayBudgetSpent is the notice of a run whose agent's runs of the day it
// counts in (its creation's) have spent the agent's per-day budget: no
// more of them may start. It is nil when the budget leaves room, or there
// is none.
func (s *Service) dayBudgetSpent(run *mesh.TaskRun) *budgetNotice {
	b := s.budgetOf(run.TargetAgentID)
	if b == nil || b.PerDay == nil {
		return nil
	}
	day := mesh.UsageDay(run.CreatedAt)
	spent := s.index.daySpent(run.TargetAgentID, day)
	why := b.PerDay.Reached(spent)
	if why == "" {
		return nil
	}
	return &budgetNotice{AgentID: run.TargetAgentID, Limit: "per_day", Budget: *b.PerDay, Spent: *spent, Day: day,
		Message: fmt.Sprintf("agent %s has spent its budget for %s (%s)", run.TargetAgentID, day, why)}
}

// recentOrStored reads a run this region keeps, if it does.
func (s *Service) recentOrStored(ctx context.Context, id string) (*mesh.TaskRun, bool) {
	if !mesh.ValidID(id) {
		return nil, false
	}
	run, err := s.peekRun(ctx, id)
	return run, err == nil
}

// enforceBudget holds a run whose own usage grew against its agent's
// per-run and per-day budgets.
func (s *Service) enforceBudget(ctx context.Context, run *mesh.TaskRun) {
	if s.enforceRunBudget(ctx, run) {
		return
	}
	b := s.budgetOf(run.TargetAgentID)
	if b == nil || b.PerDay == nil {
		return
	}
	day := mesh.UsageDay(run.CreatedAt)
	spent := s.index.daySpent(run.TargetAgentID, day)
	if why := b.PerDay.Passed(spent); why != "" {
		n := budgetNotice{AgentID: run.TargetAgentID, Limit: "per_day", Budget: *b.PerDay, Spent: *spent, Day: day,
			Message: fmt.Sprintf("agent %s passed its budget for %s (%s)", run.TargetAgentID, day, why)}
		s.stopForBudget(ctx, run, n)
		s.stopDaysOtherRuns(ctx, run, n)
	}
}

// stopDaysOtherRuns cancels the runs of run's agent that count in the
// same day and have not ended (running, waiting, or not yet claimed):
// the day's budget is spent, and each of them would spend more of it.
func (s *Service) stopDaysOtherRuns(ctx context.Context, run *mesh.TaskRun, n budgetNotice) {
	for _, other := range s.index.activeRuns() {
		if other.agentID != run.TargetAgentID || other.day != n.Day || other.id == run.ID {
			continue
		}
		s.stopForBudget(ctx, &mesh.TaskRun{ID: other.id, Status: other.status}, n)
	}
}

// enforceRunBudget holds a run's usage_total against its agent's per-run
// budget and says whether it passed it.
func (s *Service) enforceRunBudget(ctx context.Context, run *mesh.TaskRun) bool {
	b := s.budgetOf(run.TargetAgentID)
	if b == nil || b.PerRun == nil {
		return false
	}
	why := b.PerRun.Passed(run.UsageTotal)
	if why == "" {
		return false
	}
	s.stopForBudget(ctx, run, budgetNotice{AgentID: run.TargetAgentID, Limit: "per_run", Budget: *b.PerRun, Spent: *run.UsageTotal,
		Message: fmt.Sprintf("task run %s passed its agent's per-run budget (%s)", run.ID, why)})
	return true
}

// stopForBudget cancels a run that passed a budget, if it has not ended,
// and tells the agent's owner.
func (s *Service) stopForBudget(ctx context.Context, run *mesh.TaskRun, n budgetNotice) {
	n.TaskRunID, n.Action = run.ID, "exceeded"
	if !run.Status.Terminal() {
		canceled := false
		_, err := s.transition(ctx, run.ID, func(r *mesh.TaskRun) (string, error) {
			canceled = false
			if r.Status.Terminal() {
				// Ended meanwhile: nothing to stop.
				return "", errUnchanged
			}
			canceled = true
			return cancelForBudget(r, n), nil
		})
		if err != nil {
			s.cfg.Logger.Warn().Err(err).Str("task_run_id", run.ID).Msg("could not cancel a run that passed its budget")
		} else if canceled {
			n.Action = "canceled"
		}
	}
	s.tellBudget(ctx, n)
}

// cancelForBudget ends r, which has not ended, as canceled for the budget
// n says it passed, and returns the event of the change.
func cancelForBudget(r *mesh.TaskRun, n budgetNotice) string {
	event := cancelRun(r, n.Message)
	r.Error = &mesh.RunError{Code: mesh.ReasonBudgetExceeded, Message: n.Message, Details: map[string]any{"limit": n.Limit, "budget": n.Budget, "spent": n.Spent}}
	return event
}

// budgetNotice is the data of agent.budget_exceeded.
type budgetNotice struct {
	AgentID   string     `json:"agent_id"`
	Limit     string     `json:"limit"`
	Budget    mesh.Limit `json:"budget"`
	Spent     mesh.Usage `json:"spent"`
	Day       string     `json:"day,omitempty"`
	Action    string     `json:"action"`
	TaskRunID string     `json:"task_run_id,omitempty"`
	Message   string     `json:"message"`
}

// tellBudget publishes agent.budget_exceeded.
func (s *Service) tellBudget(ctx context.Context, n budgetNotice) {
	id := mesh.NewID()
	if n.TaskRunID != "" && n.Action != "refused" {
		// Once per run and limit, however often it is noticed.
		id = n.TaskRunID + ".budget." + n.Limit
	}
	err := s.events.Publish(ctx, bus.Event{Type: mesh.EventAgentBudgetExceeded, Kind: mesh.KindAgent, AgentID: n.AgentID, Subject: n.AgentID, ID: id, Data: n})
	if err != nil {
		s.cfg.Logger.Warn().Err(err).Str("agent_id", n.AgentID).Msg("could not publish a budget notice")
	}
}
