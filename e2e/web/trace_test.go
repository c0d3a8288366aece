package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestWeb_TaskPageShowsTheDelegationTrace: a task a routing rule handed on
// shows the whole tree on its page, with each hop's agent and status, the
// delegate's hop links to its own page, and that page shows the same tree
// from the delegate's side; the trace follows the runs live.
func TestWeb_TaskPageShowsTheDelegationTrace(t *testing.T) {
	p := meshtest.StartPlatform(t, meshtest.Options{})
	writerHost, translatorHost := meshtest.NewScripted("Writer"), meshtest.NewScripted("Translator")
	writer := meshtest.StartOnlineAgent(t, p, meshtest.AgentOptions{Name: "Writer", Provider: writerHost})
	translator := meshtest.StartOnlineAgent(t, p, meshtest.AgentOptions{Name: "Translator", Provider: translatorHost})
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts/" + writer.Agent.ID + "/routing-rules", Owner: true,
		JSON: map[string]any{"match": map[string]any{"keywords": []string{"translate"}}, "target": map[string]any{"agent_id": translator.Agent.ID}}}).
		Expect(t, http.StatusCreated)

	// "wait…" holds the delegate until the test opens the gate.
	parent := p.CreateTask(writer.Agent.ID, "wait, then translate the report")
	delegated := p.WaitTask(parent.ID, 30*time.Second, func(r mesh.TaskRun) bool { return r.DelegatedTo != nil && r.DelegatedTo.TaskRunID != "" })
	childID := delegated.DelegatedTo.TaskRunID
	p.WaitTask(childID, 30*time.Second, meshtest.StatusIs(mesh.StatusRunning))

	b := newBrowser(t)
	b.signIn(p)
	b.open(p.APIBase + "/tasks/" + parent.ID)
	b.waitText("main h1", "Task")
	b.waitText("#task-trace", "Writer (this task)")
	b.waitText(`#task-trace li[data-task-run-id="`+childID+`"] .badge`, "Working")
	b.shot("delegation trace while the delegate works")
	b.checkA11y("the task page with a delegation trace")

	translatorHost.Gate <- struct{}{}
	b.waitText("#task-status", "Completed")
	b.waitText(`#task-trace li[data-task-run-id="`+childID+`"] .badge`, "Completed")
	b.waitText(`#task-trace li[data-task-run-id="`+parent.ID+`"] > .hop .badge`, "Completed")
	b.waitText("#task-result", "Translator: wait, then translate the report")
	b.shot("delegation trace completed")

	// The delegate's hop leads to its page, which shows the same tree.
	b.click(`#task-trace a[href="/tasks/` + childID + `"]`)
	b.waitJS("the delegate's page", `() => location.pathname === '/tasks/`+childID+`'`)
	b.waitText("#task-trace", "Translator (this task)")
	tree := b.textOf("#task-trace")
	if !strings.Contains(tree, "Writer") || strings.Index(tree, "Writer") > strings.Index(tree, "Translator") {
		t.Fatalf("the delegate's page should show the tree from its root, Writer first:\n%s", tree)
	}
	if !strings.Contains(tree, "key a2a:") {
		t.Errorf("the delegate's hop should show its idempotency key:\n%s", tree)
	}

	// A run nobody delegated has no trace section.
	plain := p.CreateTask(writer.Agent.ID, "hello")
	p.WaitTask(plain.ID, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted))
	b.open(p.APIBase + "/tasks/" + plain.ID)
	b.waitText("#task-status", "Completed")
	if js[bool](b, `!document.querySelector('#task-trace').closest('section').hidden`) {
		t.Fatal("a run without delegation shows a delegation section")
	}
}
