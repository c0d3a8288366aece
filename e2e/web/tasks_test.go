package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// TestWeb_TaskListFiltersByAgentAndStatusAndUpdatesLive: the list shows the
// runs asked for, and new runs and changes arrive without reloading.
func TestWeb_TaskListFiltersByAgentAndStatusAndUpdatesLive(t *testing.T) {
	p := meshtest.StartPlatform(t)
	alpha, beta := p.CreateAgent("Alpha"), p.CreateAgent("Beta")
	p.CreateTask(alpha.ID, "alpha's first")
	p.CreateTask(beta.ID, "beta's first")
	b := newBrowser(t)
	b.signIn(p)
	b.click(`nav a[href="/tasks"]`)
	b.waitText(".runs", "beta's first")
	b.waitText(".runs", "alpha's first")

	// Only Alpha's runs, also the ones created from now on.
	b.setSelect("select[name=agent_id]", alpha.ID)
	b.waitJS("only Alpha's runs", `() => { const t = document.querySelector('.runs').textContent; return t.includes("alpha's first") && !t.includes("beta's first"); }`)
	if loc := js[string](b, "location.search"); loc != "?agent="+alpha.ID {
		t.Errorf("the filter is not in the address: %q", loc)
	}
	p.CreateTask(beta.ID, "beta's second")
	second := p.CreateTask(alpha.ID, "alpha's second")
	b.waitText(".runs li:first-child", "alpha's second")
	b.waitText(".runs li:first-child .badge", "Waiting")
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + second.ID + "/cancel", Owner: true}).Expect(t, http.StatusOK)
	b.waitText(".runs li:first-child .badge", "Canceled")
	if got := b.textOf(".runs"); strings.Contains(got, "beta's second") {
		t.Fatalf("Beta's run is listed under Alpha's filter:\n%s", got)
	}
	b.shot("tasks of one agent, updated live")

	// Only canceled runs.
	b.setSelect("select[name=status]", "canceled")
	b.waitJS("only the canceled run", `() => { const rows = document.querySelectorAll('.runs li'); return rows.length === 1 && rows[0].textContent.includes("alpha's second"); }`)
	b.shot("canceled tasks of one agent")
	b.checkA11y("the task list")
}

// setSelect chooses a value in a select as a person would, firing change.
func (b *browserT) setSelect(sel, value string) {
	b.t.Helper()
	js[bool](b, `(() => { const s = document.querySelector(`+quoteJS(sel)+`); s.value = `+quoteJS(value)+`;
		s.dispatchEvent(new Event('change', {bubbles: true})); return s.value === `+quoteJS(value)+`; })()`)
}

func quoteJS(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestWeb_TaskListNamesTheRegionsItCouldNotAsk: a list of every agent's
// tasks made while a region that keeps some cannot be reached shows the
// tasks of the regions that answered and says which region's are missing.
func TestWeb_TaskListNamesTheRegionsItCouldNotAsk(t *testing.T) {
	p := meshtest.StartPlatform(t)
	here := p.CreateAgent("Here")
	p.CreateTask(here.ID, "a task kept here")
	// An agent homed in a region that runs no services: that region keeps
	// its tasks and answers nothing.
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Owner: true,
		JSON: map[string]any{"name": "Far away", "home_region": "far"}}).Expect(t, http.StatusCreated)
	b := newBrowser(t)
	b.signIn(p)
	b.click(`nav a[href="/tasks"]`)
	b.waitText(".runs", "a task kept here")
	b.waitJS("the notice naming the region", `() => { const n = document.querySelector('#tasks-partial'); return n && !n.hidden && n.textContent.includes('region far'); }`)
	b.checkA11y("the task list with a region missing")
}
