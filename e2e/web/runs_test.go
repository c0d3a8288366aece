package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestWeb_FinishedRunShowsItsFinalState: while a run works, the chat and the
// task page show its progress and a bar; once it ended, the chat shows the
// answer with neither, and the task page keeps the messages but no bar.
func TestWeb_FinishedRunShowsItsFinalState(t *testing.T) {
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.HeartbeatTimeout, c.Lease = time.Minute, time.Minute })
	agent := p.CreateAgent("Counter")
	rt, run := p.HeldRun(t, agent.ID, "count the runs")
	p.Report(t, run.ID, "progress", rt.RuntimeToken, map[string]any{"message": "halfway there", "percent": 40}).Expect(t, http.StatusOK)

	b := newBrowser(t)
	b.signIn(p)
	b.open(p.APIBase + "/agents/" + agent.ID)
	b.waitText("#work .msg.agent", "halfway there")
	b.waitJS("the chat's progress bar", `() => document.querySelector('#work .msg.agent progress')?.value === 40`)
	b.shot("a run at work in the chat")

	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "Twelve runs."}}).Expect(t, http.StatusOK)
	b.waitText("#work .msg.agent .badge", "Completed")
	b.waitText("#work .msg.agent", "Twelve runs.")
	b.shot("the run ended in the chat")
	if js[bool](b, `!!document.querySelector('#work progress')`) {
		t.Error("the chat still shows a progress bar for the finished run")
	}
	if reply := b.textOf("#work .msg.agent"); strings.Contains(reply, "halfway there") {
		t.Errorf("the chat still shows the finished run's last progress:\n%s", reply)
	}

	// Loaded afresh, the ended run reads the same, and its task page keeps
	// what was reported without a bar.
	b.open(p.APIBase + "/agents/" + agent.ID)
	b.waitText("#work .msg.agent", "Twelve runs.")
	if js[bool](b, `!!document.querySelector('#work progress')`) || strings.Contains(b.textOf("#work .msg.agent"), "halfway there") {
		t.Errorf("the chat, loaded afresh, shows the finished run's progress:\n%s", b.textOf("#work"))
	}
	b.open(p.APIBase + "/tasks/" + run.ID)
	b.waitText("#task-status", "Completed")
	b.waitText("#task-progress", "halfway there")
	if js[bool](b, `!!document.querySelector('main progress')`) {
		t.Error("the task page shows a progress bar for the finished run")
	}
}

// TestWeb_TimesShowTheirDate: the page's times carry their date, written
// in the browser's language and time zone (German in UTC here), also for
// today.
func TestWeb_TimesShowTheirDate(t *testing.T) {
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("Dated")
	run := p.CreateTask(agent.ID, "what day is it")

	b := newBrowser(t)
	ctx, cancel := context.WithTimeout(b.ctx, waitStart)
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: "de_DE"}); err != nil {
		t.Fatalf("set the browser's locale: %v", err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "UTC"}); err != nil {
		t.Fatalf("set the browser's time zone: %v", err)
	}
	b.signIn(p)
	day := run.CreatedAt.UTC().Format("02.01.2006")
	clock := run.CreatedAt.UTC().Format("15:04")

	b.open(p.APIBase + "/tasks")
	b.waitText(".runs", "what day is it")
	if meta := b.textOf(`li[data-task-run-id="` + run.ID + `"] .run-meta`); !strings.Contains(meta, day) || !strings.Contains(meta, clock) {
		t.Errorf("the task list shows the run's time as %q, want the date %s and the time %s", meta, day, clock)
	}
	b.open(p.APIBase + "/tasks/" + run.ID)
	b.waitText("#task-status", "Waiting")
	if meta := b.textOf("main dl.meta"); !strings.Contains(meta, day+", "+clock) {
		t.Errorf("the task page shows %q, want the date %s before the time %s", meta, day, clock)
	}
	b.open(p.APIBase + "/agents/" + agent.ID)
	b.waitText("#work .msg.agent", day)
	b.shot("times with their date")
}

// TestWeb_AnsweredRunShowsTheWholeConversation: a run that asked twice for
// input and was answered each time shows, in the chat and on its task
// page, every turn in order: the request, each question, each answer,
// then the agent's last word.
func TestWeb_AnsweredRunShowsTheWholeConversation(t *testing.T) {
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.HeartbeatTimeout, c.Lease = time.Minute, time.Minute })
	agent := p.CreateAgent("Booker")
	rt, run := p.HeldRun(t, agent.ID, "book a table")
	ask := func(question string) {
		t.Helper()
		p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{
			"output": map[string]any{"text": question}, "input_required": true,
		}).Expect(t, http.StatusOK)
	}
	answer := func(text string) {
		t.Helper()
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/input", Owner: true,
			JSON: map[string]any{"text": text}}).Expect(t, http.StatusOK)
		if next := p.PullRun(t, agent.ID, rt.RuntimeToken); next.ID != run.ID || next.InputText() != text {
			t.Fatalf("the runtime claimed %s with input %s", next.ID, next.Input)
		}
	}
	ask("For how many people?")
	answer("Four")
	ask("Which evening?")

	// The chat, loaded while the agent waits for the second answer.
	b := newBrowser(t)
	b.signIn(p)
	b.open(p.APIBase + "/agents/" + agent.ID)
	b.waitText("#work", "Which evening?")
	wantThread(t, b, []turn{{"user", "book a table"}, {"agent", "For how many people?"}, {"user", "Four"}, {"agent", "Which evening?"}})

	// Answered from the chat, then the agent's last word arrives live.
	b.typeInto("#work textarea", "Friday")
	b.click("#work form button[type=submit]")
	b.waitJS("the answer in the chat", `() => [...document.querySelectorAll('#work .msg.user')].some((m) => m.textContent.includes('Friday'))`)
	if next := p.PullRun(t, agent.ID, rt.RuntimeToken); next.ID != run.ID || next.InputText() != "Friday" {
		t.Fatalf("the chat's answer reached %s with input %s", next.ID, next.Input)
	}
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "Booked for four on Friday."}}).Expect(t, http.StatusOK)
	b.waitText("#work", "Booked for four on Friday.")
	all := []turn{{"user", "book a table"}, {"agent", "For how many people?"}, {"user", "Four"}, {"agent", "Which evening?"}, {"user", "Friday"}, {"agent", "Booked for four on Friday."}}
	wantThread(t, b, all)
	b.shot("the whole conversation in the chat")

	// Loaded afresh, the chat and the task page show the same turns.
	b.open(p.APIBase + "/agents/" + agent.ID)
	b.waitText("#work", "Booked for four on Friday.")
	wantThread(t, b, all)
	b.open(p.APIBase + "/tasks/" + run.ID)
	b.waitText("#task-result", "Booked for four on Friday.")
	b.shot("the whole conversation on the task page")
	b.checkA11y("a task page with a conversation")
	var shown []turn
	if err := json.Unmarshal([]byte(js[string](b, `JSON.stringify([...document.querySelectorAll('#task-conversation .turn')].map((li) => [li.classList.contains('agent') ? 'agent' : 'user', li.querySelector('.output').innerText.trim()]))`)), &shown); err != nil {
		t.Fatal(err)
	}
	if want := all[:5]; !equalTurns(shown, want) {
		t.Errorf("the task page's conversation is %v, want %v", shown, want)
	}
	if title := js[string](b, "document.title"); !strings.Contains(title, "book a table") {
		t.Errorf("the task page's title is %q, want the request", title)
	}
	if got := p.GetTask(run.ID); got.Status != mesh.StatusCompleted {
		t.Fatalf("the run is %s", got.Status)
	}
}

// turn is one message of a conversation as the page shows it: who said it
// ("user" or "agent") and its text.
type turn [2]string

func (tu *turn) UnmarshalJSON(b []byte) error {
	var pair []string
	if err := json.Unmarshal(b, &pair); err != nil || len(pair) != 2 {
		return err
	}
	tu[0], tu[1] = pair[0], pair[1]
	return nil
}

func equalTurns(a, b []turn) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i][0] != b[i][0] || !strings.Contains(a[i][1], b[i][1]) {
			return false
		}
	}
	return true
}

// wantThread checks the chat's messages, in order, against want: each
// message from the right side and holding the turn's text.
func wantThread(t *testing.T, b *browserT, want []turn) {
	t.Helper()
	var shown []turn
	if err := json.Unmarshal([]byte(js[string](b, `JSON.stringify([...document.querySelectorAll('#work .thread > li')].map((li) => [li.classList.contains('user') ? 'user' : 'agent', li.innerText]))`)), &shown); err != nil {
		t.Fatal(err)
	}
	if !equalTurns(shown, want) {
		t.Errorf("the chat shows %q, want %q", shown, want)
	}
}
