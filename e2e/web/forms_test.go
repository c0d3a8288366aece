package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestWeb_APIErrorsAreShownInWordsNextToTheirCause: what the platform
// refuses is explained beside the field it is about.
func TestWeb_APIErrorsAreShownInWordsNextToTheirCause(t *testing.T) {
	p := meshtest.StartPlatform(t)
	b := newBrowser(t)
	b.signIn(p)

	// An agent without a name.
	b.click(`button[aria-controls="new-agent"]`)
	b.typeInto("#new-agent input[name=description]", "has no name")
	b.click("#new-agent button[type=submit]")
	b.waitJS("the name field marked invalid", `() => document.querySelector('#new-agent input[name=name]').getAttribute('aria-invalid') === 'true'`)
	msg := js[string](b, `(() => { const input = document.querySelector('#new-agent input[name=name]');
		const err = document.getElementById(input.id + '-error');
		return input.getAttribute('aria-describedby').includes(err.id) && !err.hidden && err.closest('.field') === input.closest('.field') ? err.textContent : ''; })()`)
	if msg != "Name is required." {
		t.Fatalf("the name field's error is %q, want the platform's answer in words beside it", msg)
	}
	if focused := js[string](b, "document.activeElement.name"); focused != "name" {
		t.Errorf("the focus is on %q, want the field in error", focused)
	}
	b.shot("agent without a name")
	b.checkA11y("the agent form with an error")

	// Editing an agent: the same answer beside the same field, then saved.
	edited := p.CreateAgent("Editable")
	b.open(p.APIBase + "/agents/" + edited.ID)
	b.click("#details button[aria-expanded]")
	js[bool](b, `(document.querySelector('#details input[name=name]').value = '') === ''`)
	b.click("#details button[type=submit]")
	b.waitText(`#details [data-field="name"] .field-error`, "Name is required.")
	b.shot("editing an agent without a name")
	b.typeInto("#details input[name=name]", "Edited")
	b.typeInto("#details textarea[name=instructions]", "Answer in French.")
	b.click("#details button[type=submit]")
	b.waitText("main h1", "Edited")
	b.waitText("#details", "Answer in French.")
	var saved mesh.Agent
	p.Do(http.MethodGet, "/agent-accounts/"+edited.ID, nil, &saved)
	if saved.Name != "Edited" || saved.Instructions != "Answer in French." {
		t.Fatalf("the platform has %+v after the edit", saved)
	}

	// A webhook to a private address, on a platform that does not allow them.
	b.click(`nav a[href="/integrations"]`)
	b.waitText("main h1", "Integrations")
	b.typeInto("#webhook-form input[name=url]", "http://127.0.0.1:9/hook")
	b.click("#webhook-form button[type=submit]")
	b.waitJS("the URL field marked invalid", `() => document.querySelector('#webhook-form input[name=url]').getAttribute('aria-invalid') === 'true'`)
	urlErr := b.textOf(`#webhook-form [data-field="url"] .field-error`)
	if !strings.Contains(urlErr, "private network") || !strings.Contains(urlErr, "--allow-private-webhooks") {
		t.Fatalf("the URL field's error is %q", urlErr)
	}
	// A malformed one.
	js[bool](b, `(document.querySelector('#webhook-form input[name=url]').value = '') === ''`)
	b.typeInto("#webhook-form input[name=url]", "not a url")
	b.click("#webhook-form button[type=submit]")
	b.waitText(`#webhook-form [data-field="url"] .field-error`, "URL must be an http or https URL")
	b.shot("webhook with a bad URL")

	// Cancelling a task that ended meanwhile: the error sits beside the button.
	agent := p.CreateAgent("errors")
	run := p.CreateTask(agent.ID, "cancel me twice")
	b.open(p.APIBase + "/tasks/" + run.ID)
	b.waitText("#task-status", "Waiting")
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/cancel", Owner: true}).Expect(t, http.StatusOK)
	b.waitText("#task-status", "Canceled")
	if js[bool](b, "document.querySelector('#cancel-task').offsetParent !== null") {
		t.Fatal("the cancel button is still offered for a canceled task")
	}
}

// TestWeb_KeyboardOnly walks the main forms with Tab, Enter and Space
// only; every stop shows where the focus is.
func TestWeb_KeyboardOnly(t *testing.T) {
	p := meshtest.StartPlatform(t)
	b := newBrowser(t)
	b.signIn(p)

	b.tabTo("the skip link", `el.matches('a.skip')`)
	b.tabTo("the New agent button", `el.matches('button[aria-controls="new-agent"]')`)
	b.key(kb.Enter)
	b.waitJS("the name field focused", `() => document.activeElement.name === 'name'`)
	b.key("Keyboard agent")
	b.tabTo("the description", `el.name === 'description'`)
	b.key("Made without a mouse")
	b.tabTo("Add skill", `el.textContent === 'Add skill'`)
	b.key(" ")
	b.waitJS("the new skill's name focused", `() => document.activeElement.classList.contains('skill-name')`)
	b.key("Summaries")
	b.tabTo("the skill's description", `el.classList.contains('skill-description')`)
	b.key("Summarises long text")
	b.shot("agent form filled with the keyboard")
	b.tabTo("Create agent", `el.textContent === 'Create agent'`)
	b.key(kb.Enter)
	b.waitText("main h1", "Keyboard agent")
	b.waitText("#details", "Summaries")

	// Send a task with the keyboard: the agent is not connected, so it waits.
	b.tabTo("the message box", `el.name === 'input'`)
	b.key("hello from the keyboard")
	b.tabTo("Send", `el.textContent === 'Send'`)
	b.key(kb.Enter)
	b.waitText(".msg.agent .badge", "Waiting")
	b.waitJS("the message box focused again", `() => document.activeElement.name === 'input'`)

	// Generate a connection code with Space.
	b.do("focus the top", chromedp.Evaluate[chromedp.Void](`document.querySelector('main h1').focus()`))
	b.tabTo("Generate connection code", `el.id === 'generate-code'`)
	b.key(" ")
	b.waitJS("a pairing code", `() => (document.querySelector('#pairing-code')?.textContent || '').length === 23`)
	b.tabTo("Copy code", `el.textContent === 'Copy code'`)
	b.shot("connection code reached with the keyboard")

	var runs struct {
		TaskRuns []mesh.TaskRun `json:"task_runs"`
	}
	p.Do(http.MethodGet, "/task-runs", nil, &runs)
	if len(runs.TaskRuns) != 1 || runs.TaskRuns[0].InputText() != "hello from the keyboard" {
		t.Fatalf("task runs after the keyboard walk: %+v", runs.TaskRuns)
	}
}

// tabTo presses Tab until the focused element matches cond (JavaScript
// with el bound to it), checking at every stop that the focus is visible.
func (b *browserT) tabTo(what, cond string) {
	b.t.Helper()
	for range 40 {
		b.key(kb.Tab)
		state := js[string](b, `(() => { const el = document.activeElement; if (!el || el === document.body) return 'none';
			const cs = getComputedStyle(el);
			const visible = cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) >= 2;
			const label = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' + (el.name || el.textContent.trim().slice(0, 30));
			return (visible ? '' : 'invisible:') + ((`+cond+`) ? 'match' : label); })()`)
		if strings.HasPrefix(state, "invisible:") {
			b.shot("invisible focus")
			b.t.Fatalf("the focus on %s is not visible", strings.TrimPrefix(state, "invisible:"))
		}
		if state == "match" {
			return
		}
	}
	b.shot("tab never reached")
	b.t.Fatalf("Tab never reached %s", what)
}

// TestWeb_PhoneWidth shows every view at 375 pixels: nothing scrolls
// sideways.
func TestWeb_PhoneWidth(t *testing.T) {
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("An agent with a rather long name that must wrap on a phone")
	run := p.CreateTask(agent.ID, strings.Repeat("a long request without any space ", 3)+strings.Repeat("x", 120))
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/consumers", Owner: true, JSON: map[string]any{"name": "phone"}}).Expect(t, http.StatusCreated)

	b := newBrowser(t)
	b.do("phone viewport", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile))
	b.signIn(p)
	pages := []struct{ name, path, ready string }{
		{"agents", "/", ".card h2 a"},
		{"agent", "/agents/" + agent.ID, "#a2a table.endpoints"},
		{"tasks", "/tasks", ".runs li"},
		{"task", "/tasks/" + run.ID, "#task-status .badge"},
		{"integrations", "/integrations", "#consumers .card h3"},
	}
	for _, pg := range pages {
		b.open(p.APIBase + pg.path)
		b.waitJS(pg.name+" loaded", `(sel) => document.querySelector(sel) !== null`, pg.ready)
		if pg.name == "agent" {
			b.waitJS("the API keys and routing rules", `() => !!document.querySelector('#api-keys li') && !!document.querySelector('#routing-rules li')`)
			b.click("#generate-code")
			b.waitJS("the instructions", `() => (document.querySelector('#instructions')?.textContent || '').length > 100`)
		}
		b.shot("phone " + pg.name)
		overflow := js[string](b, `(() => {
			const width = document.documentElement.clientWidth;
			if (document.documentElement.scrollWidth <= width) return '';
			const wide = [...document.querySelectorAll('body *')].filter((el) => el.getBoundingClientRect().right > width + 1)
				.map((el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (typeof el.className === 'string' && el.className ? '.' + el.className.split(' ').join('.') : ''));
			return document.documentElement.scrollWidth + ' > ' + width + ': ' + wide.slice(0, 8).join(', '); })()`)
		if overflow != "" {
			t.Errorf("the %s page scrolls sideways at 375 px: %s", pg.name, overflow)
		}
		b.checkA11y(fmt.Sprintf("the %s page at phone width", pg.name))
	}
}
