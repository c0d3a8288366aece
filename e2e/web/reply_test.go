package web_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestWeb_AnswerAnAgentsQuestion: a run waiting for input shows the agent's
// question and a reply box on its task page; the answer sends the same run
// back to the agent, which claims it with that input, and the page follows it.
func TestWeb_AnswerAnAgentsQuestion(t *testing.T) {
	// The runtime heartbeats once: it must stay online while the browser
	// works, however slowly.
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.HeartbeatTimeout, c.Lease = time.Minute, time.Minute })
	agent := p.CreateAgent("Booker")
	rt, run := p.HeldRun(t, agent.ID, "book a table")
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{
		"output": map[string]any{"text": "For how many people?"}, "input_required": true,
	}).Expect(t, http.StatusOK)

	b := newBrowser(t)
	b.signIn(p)
	b.open(p.APIBase + "/tasks/" + run.ID)
	b.waitText("#task-result", "For how many people?")
	b.waitText("#task-reply label", "Your answer")
	b.checkA11y("a task waiting for an answer")
	b.shot("the agent asks")
	b.typeInto("#task-reply textarea", "Four")
	b.click("#task-reply button[type=submit]")
	b.waitText("#task-status", "Waiting")

	next := p.PullRun(t, agent.ID, rt.RuntimeToken)
	if next.ID != run.ID || next.InputText() != "Four" {
		t.Fatalf("the runtime claimed %s with input %s", next.ID, next.Input)
	}
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "Booked for four."}}).Expect(t, http.StatusOK)
	b.waitText("#task-result", "Booked for four.")
	b.waitJS("no reply box once it ended", `() => !document.querySelector('#task-reply') || document.querySelector('#task-reply').hidden`)
	b.shot("answered and done")
	if got := p.GetTask(run.ID); got.Status != mesh.StatusCompleted {
		t.Fatalf("the run is %s", got.Status)
	}

	// In the agent's chat, a message answers the question waiting there
	// instead of starting a new task.
	second := p.CreateTask(agent.ID, "order flowers")
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	p.Report(t, second.ID, "complete", rt.RuntimeToken, map[string]any{
		"output": map[string]any{"text": "Which colour?"}, "input_required": true,
	}).Expect(t, http.StatusOK)
	b.open(p.APIBase + "/agents/" + agent.ID)
	b.waitText("#work", "Which colour?")
	b.waitText("#work", "your next message answers it")
	b.typeInto("#work textarea", "Red")
	b.click("#work form button[type=submit]")
	b.waitJS("the answer in the chat", `() => [...document.querySelectorAll('#work .msg.user')].some((m) => m.textContent.includes('Red'))`)
	b.shot("answered in the chat")
	answered := p.PullRun(t, agent.ID, rt.RuntimeToken)
	if answered.ID != second.ID || answered.InputText() != "Red" {
		t.Fatalf("the chat's answer reached %s with input %s, want %s", answered.ID, answered.Input, second.ID)
	}
	var list struct {
		Runs []mesh.TaskRun `json:"task_runs"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?agent_id=" + agent.ID, Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.Runs) != 2 {
		t.Fatalf("%d runs for the agent, want the two: the chat's answer started a new task", len(list.Runs))
	}
}

// TestWeb_AgentWhoseAdapterIsDownIsOnlineButNotReady: the agent's page says
// when its runtime is online but its local adapter does not answer, and
// goes back to plain online when the adapter is back.
func TestWeb_AgentWhoseAdapterIsDownIsOnlineButNotReady(t *testing.T) {
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.HeartbeatTimeout, c.Lease = time.Minute, time.Minute })
	agent := p.CreateAgent("Adapterless")
	rt := p.Attach(agent.ID)
	beat := func(unreachable bool) {
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/heartbeat", RuntimeToken: rt.RuntimeToken,
			JSON: map[string]any{"adapter_unreachable": unreachable}}).Expect(t, http.StatusOK)
	}
	beat(true)
	b := newBrowser(t)
	b.signIn(p)
	b.open(p.APIBase + "/agents/" + agent.ID)
	b.waitText(".presence .status-word", "Online, not ready")
	b.waitText(".presence", "adapter does not answer")
	b.shot("online but not ready")
	beat(false)
	b.open(p.APIBase + "/agents/" + agent.ID)
	b.waitJS("plain online", `() => (document.querySelector('.presence .status-word')?.textContent || '') === 'Online'`)
}
