package web_test

import (
	"testing"

	"github.com/a2amesh/a2amesh/mesh"
)

// TestWeb_RecoversAfterAPlatformRestart: with the agent page open, the
// platform stops and starts again on the same data dir and ports. The page
// says it is reconnecting, then shows the agent's state and new work again
// by itself: same document, same sign-in session, no reload.
func TestWeb_RecoversAfterAPlatformRestart(t *testing.T) {
	p := startPlatform(t)
	endpoint := startAdapter(t, agentScript(t))
	agent := p.CreateAgent("Survivor")
	m := newMachine(t)
	m.pair([]string{"pair", p.PairingCode(agent.ID), "--api-base", p.APIBase, "--local-executor-type", "custom"}, endpoint)
	m.start()

	b := newBrowser(t)
	b.open(p.loginLink())
	b.waitText("main h1", "Agents")
	b.waitText(".cards", "Online")
	b.click(`a[href="/agents/` + agent.ID + `"]`)
	b.waitText("main h1", "Survivor")
	b.waitText(".agent-presence", "Online")
	js[bool](b, "(window.__sameDocument = true)")
	b.shot("before the restart")

	p.proc.stop(t)
	b.waitText("#live", "Reconnecting")
	b.shot("platform stopped")
	p.boot()

	b.waitText("#live", "Live")
	b.waitText(".agent-presence", "Online")
	// Work created after the restart arrives live, progress and result.
	run := p.CreateTask(agent.ID, "after the restart")
	b.waitJS("the new task's progress in the chat", `(id) => { const m = document.querySelector('.msg.agent[data-task-run-id="' + id + '"]');
		return !!m && m.textContent.includes('reading the request'); }`, run.ID)
	b.waitJS("the new task completed", `(id) => document.querySelector('.msg.agent[data-task-run-id="' + id + '"]').textContent.includes('Done: after the restart')`, run.ID)
	b.shot("after the restart")
	if !js[bool](b, "window.__sameDocument === true") {
		t.Fatal("the page reloaded")
	}
	if got := p.GetTask(run.ID); got.Status != mesh.StatusCompleted {
		t.Fatalf("the run is %s on the platform", got.Status)
	}
}
