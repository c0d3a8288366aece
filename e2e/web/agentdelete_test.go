package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestWeb_DeleteAnAgent: the agent's page deletes it after a second click,
// goes back to the agents, which no longer list it; its machine is
// disconnected and its waiting task canceled.
func TestWeb_DeleteAnAgent(t *testing.T) {
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("Retiring")
	p.CreateAgent("Staying")
	rt := p.OnlineRuntime(t, agent.ID)
	waiting := p.CreateTask(agent.ID, "never picked up")

	b := newBrowser(t)
	b.signIn(p)
	b.open(p.APIBase + "/agents/" + agent.ID)
	b.waitText("#details .delete-agent button.danger", "Delete this agent")
	b.checkA11y("the agent page with its delete button")
	b.click("#details .delete-agent button.danger")
	b.waitText("#details .delete-agent button.danger", "Click again to delete it")
	b.shot("delete armed")
	b.click("#details .delete-agent button.danger")
	b.waitJS("back on the agents", `() => location.pathname === '/'`)
	b.waitJS("the list without the deleted agent", `() => {
		const text = document.querySelector('main').textContent;
		return text.includes('Staying') && !text.includes('Retiring');
	}`)
	b.shot("agent deleted")

	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts/" + agent.ID, Owner: true}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
	if run := p.GetTask(waiting.ID); run.Status != mesh.StatusCanceled || run.Error == nil || !strings.Contains(run.Error.Message, "agent deleted") {
		t.Errorf("the waiting task is %s %+v, want canceled because the agent was deleted", run.Status, run.Error)
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/heartbeat", RuntimeToken: rt.RuntimeToken, JSON: map[string]any{}}).
		ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
}
