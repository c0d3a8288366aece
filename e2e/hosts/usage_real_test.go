package hosts_test

import (
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/fakemodel"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// usageAnswer is what every answer of the fake model says it cost in the
// usage scenario: counts no default of any host or of the fake produces.
var usageAnswer = fakemodel.Usage{Input: 1234, Output: 56, Cached: 200}

// testRealUsage: the real host, answered by a model whose every answer
// reports usageAnswer, reports its usage; the run records it in the one
// shape (the fake's counts times the host's model calls), the
// task_run.usage event carries it, and the agent's day sums two runs
// through GET /usage.
func testRealUsage(t *testing.T, name string) {
	t.Parallel()
	l := newRealLab(t, name)
	l.start(t)
	p := l.p
	var answered atomic.Int64
	l.model.SetRespond(func(r *fakemodel.Request) fakemodel.Reply {
		reply := l.respond(r)
		if reply.Status == 0 {
			reply.Usage = &usageAnswer
			answered.Add(1)
		}
		return reply
	})
	events := p.StreamEvents(t, url.Values{"agent_id": {l.agent.ID}, "since": {"1m"}})

	var runs []mesh.TaskRun
	for _, text := range []string{"@@plain@@ Count this.", "@@plain@@ And this."} {
		before := answered.Load()
		run := waitEnd(t, p, p.CreateTask(l.agent.ID, text).ID, mesh.StatusCompleted)
		calls := answered.Load() - before
		u := run.Usage
		if u == nil {
			t.Fatalf("run %s has no usage; output %s", run.ID, run.Output)
		}
		// Each model call of the run reported usageAnswer.
		if calls == 0 || u.InputTokens != calls*int64(usageAnswer.Input) || u.OutputTokens != calls*int64(usageAnswer.Output) ||
			u.CachedTokens != calls*int64(usageAnswer.Cached) {
			t.Fatalf("usage %+v after %d model answers of %+v each", *u, calls, usageAnswer)
		}
		if run.UsageTotal == nil || run.UsageTotal.Tokens() != u.Tokens() {
			t.Fatalf("usage_total %+v, want the run's own %+v", run.UsageTotal, *u)
		}
		t.Logf("%s reported %+v for %d model calls", name, *u, calls)
		events.Until(t, waitHost, meshtest.TypeIs(mesh.EventTaskRunUsage, run.ID))
		runs = append(runs, run)
	}

	var rep meshapi.UsageReport
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/usage?agent_id=" + l.agent.ID, Owner: true}).Expect(t, http.StatusOK).Decode(t, &rep)
	want := runs[0].Usage.Plus(runs[1].Usage)
	if len(rep.Days) != 1 || rep.Days[0].Day != mesh.UsageDay(runs[0].CreatedAt) || rep.Days[0].Runs != 2 ||
		rep.Days[0].InputTokens != want.InputTokens || rep.Days[0].OutputTokens != want.OutputTokens || rep.Days[0].CachedTokens != want.CachedTokens {
		t.Fatalf("the agent's day %+v, want the two runs' sum %+v", rep.Days, *want)
	}
}

func TestRealClaude_UsageLandsOnTheRunAndSumsPerDay(t *testing.T) { testRealUsage(t, "claude") }

func TestRealCodex_UsageLandsOnTheRunAndSumsPerDay(t *testing.T) { testRealUsage(t, "codex") }

func TestRealGemini_UsageLandsOnTheRunAndSumsPerDay(t *testing.T) { testRealUsage(t, "gemini") }

// checkUsageRolledUp checks the usage of a delegation's tree: the host's
// run spent what its model answers reported, the delegate what its command
// reported, and the host's run's usage_total is both.
func checkUsageRolledUp(t *testing.T, tree meshapi.TraceNode) {
	t.Helper()
	own, child := tree.Usage, tree.Children[0].Usage
	if own == nil || own.InputTokens == 0 || own.InputTokens%int64(usageAnswer.Input) != 0 {
		t.Fatalf("the host's run's own usage %+v, want a multiple of the model's %+v", own, usageAnswer)
	}
	if child == nil || child.InputTokens != 900 || child.OutputTokens != 90 || child.Cost() != 0.5 {
		t.Fatalf("the delegate's usage %+v, want what its command reported", child)
	}
	if total := tree.UsageTotal; total == nil || total.InputTokens != own.InputTokens+900 || total.OutputTokens != own.OutputTokens+90 || total.Cost() < own.Cost()+0.5-1e-9 {
		t.Fatalf("the host's run's usage_total %+v, want its own %+v and the delegate's %+v", total, own, child)
	}
}
