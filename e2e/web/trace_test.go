package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestWeb_RoutingRulesAndTheDelegationTrace: a routing rule is added on the
// agent's page (a wrong regular expression is refused next to its field);
// a task sent from the chat that matches it is handed on, and its page
// shows the whole tree, with each hop's agent and status, following the
// runs live; the delegate's hop links to its own page, which shows the same
// tree from the delegate's side; the rule is deleted on the page.
func TestWeb_RoutingRulesAndTheDelegationTrace(t *testing.T) {
	p := meshtest.StartPlatform(t)
	writerHost, translatorHost := meshtest.NewScripted("Writer"), meshtest.NewScripted("Translator")
	writer := meshtest.StartOnlineAgent(t, p, meshtest.AgentOptions{Name: "Writer", Provider: writerHost})
	translator := meshtest.StartOnlineAgent(t, p, meshtest.AgentOptions{Name: "Translator", Provider: translatorHost})

	b := newBrowser(t)
	b.signIn(p)
	b.open(p.APIBase + "/agents/" + writer.Agent.ID)
	b.waitText("main h1", "Writer")
	b.waitText("#routing-rules", "No rules")
	b.waitJS("the translator offered as a target", `() => [...document.querySelectorAll('#new-rule select[name=target] option')].some((o) => o.textContent === 'Translator')`)

	// A regular expression that does not compile is refused next to its field.
	b.setSelect("#new-rule select[name=match_kind]", "regex")
	b.typeInto("#new-rule input[name=match_value]", "(unclosed")
	b.click("#new-rule button[type=submit]")
	b.waitJS("the regex error next to its field", `() => { const e = document.querySelector('#new-rule [data-field=match_value] .field-error'); return !!e && !e.hidden && /compile/i.test(e.textContent); }`)
	b.shot("routing rule with a wrong regular expression")

	// A keyword rule to the translator.
	b.setSelect("#new-rule select[name=match_kind]", "keywords")
	js[bool](b, `(() => { document.querySelector('#new-rule input[name=match_value]').value = ''; return true; })()`)
	b.typeInto("#new-rule input[name=match_value]", "translate, traduire")
	b.typeInto("#new-rule input[name=rule_name]", "Translations")
	b.click("#new-rule button[type=submit]")
	b.waitText("#routing-rules", "Translations")
	b.waitText("#routing-rules", "Translator")
	b.shot("routing rule added")
	b.checkA11y("the agent page with a routing rule")
	var rules struct {
		Rules []struct {
			Match struct {
				Keywords []string `json:"keywords"`
			} `json:"match"`
			Target struct {
				AgentID string `json:"agent_id"`
			} `json:"target"`
		} `json:"rules"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts/" + writer.Agent.ID + "/routing-rules", Owner: true}).Expect(t, http.StatusOK).Decode(t, &rules)
	if len(rules.Rules) != 1 || strings.Join(rules.Rules[0].Match.Keywords, ",") != "translate,traduire" || rules.Rules[0].Target.AgentID != translator.Agent.ID {
		t.Fatalf("the platform has the rules %+v", rules.Rules)
	}

	// A matching task from the chat ("wait…" holds the delegate until the
	// test opens the gate).
	b.typeInto("textarea[name=input]", "wait, then translate the report")
	b.click(".composer button[type=submit]")
	b.waitJS("the task sent", `() => !!document.querySelector('.msg.agent a[href^="/tasks/"]')`)
	parentID := strings.TrimPrefix(js[string](b, `document.querySelector('.msg.agent a[href^="/tasks/"]').getAttribute('href')`), "/tasks/")
	delegated := p.WaitTask(parentID, 30*time.Second, func(r mesh.TaskRun) bool { return r.DelegatedTo != nil && r.DelegatedTo.TaskRunID != "" })
	childID := delegated.DelegatedTo.TaskRunID
	p.WaitTask(childID, 30*time.Second, meshtest.StatusIs(mesh.StatusRunning))
	parent := mesh.TaskRun{ID: parentID}

	b.click(`.msg.agent a[href="/tasks/` + parentID + `"]`)
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
	// The platform's own bookkeeping (the key that keeps a delegated
	// message from starting two runs) is not for people.
	if strings.Contains(tree, "key a2a:") {
		t.Errorf("the delegate's hop shows an internal idempotency key:\n%s", tree)
	}

	// A run nobody delegated has no trace section.
	plain := p.CreateTask(writer.Agent.ID, "hello")
	p.WaitTask(plain.ID, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted))
	b.open(p.APIBase + "/tasks/" + plain.ID)
	b.waitText("#task-status", "Completed")
	if js[bool](b, `!document.querySelector('#task-trace').closest('section').hidden`) {
		t.Fatal("a run without delegation shows a delegation section")
	}

	// The rule is deleted on the page; the next such task stays with the writer.
	b.open(p.APIBase + "/agents/" + writer.Agent.ID)
	b.waitText("#routing-rules", "Translations")
	b.click("#routing-rules li[data-rule-id] button.danger")
	b.waitText("#routing-rules li[data-rule-id] button.danger", "Click again to delete")
	b.click("#routing-rules li[data-rule-id] button.danger")
	b.waitText("#routing-rules", "No rules")
	kept := p.WaitTask(p.CreateTask(writer.Agent.ID, "translate this too").ID, 30*time.Second, meshtest.StatusIs(mesh.StatusCompleted))
	if kept.DelegatedTo != nil {
		t.Fatalf("a task was delegated after its rule was deleted: %+v", kept.DelegatedTo)
	}
}
