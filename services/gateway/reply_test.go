package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestReply_APersonAnswersARunWaitingForInput: POST /task-runs/{id}/input
// answers a run in input-required with the next turn; the same run goes back
// to its agent's queue and the runtime claims it again. A run that is not
// waiting, an unknown run, a body without an answer and a caller without a
// credential are refused, each with its own error.
func TestReply_APersonAnswersARunWaitingForInput(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("asker")
	rt := p.OnlineRuntime(t, agent.ID)
	run := p.CreateTask(agent.ID, "book a table")
	reply := func(id string, body map[string]any) *meshtest.Response {
		return p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + id + "/input", Owner: true, JSON: body})
	}

	reply(run.ID, map[string]any{"text": "four"}).ExpectError(t, http.StatusConflict, mesh.CodeInvalidTransition)
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{
		"output": map[string]any{"text": "For how many?"}, "input_required": true,
	}).Expect(t, http.StatusOK)

	reply(run.ID, map[string]any{}).ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	reply(run.ID, map[string]any{"text": "four", "input": map[string]any{"text": "five"}}).ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	reply(mesh.NewID(), map[string]any{"text": "four"}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/input", JSON: map[string]any{"text": "four"}}).
		ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)

	next := reply(run.ID, map[string]any{"text": "four"}).Expect(t, http.StatusOK).Run(t)
	if next.ID != run.ID || next.Status != mesh.StatusPending || next.InputText() != "four" {
		t.Fatalf("answered run: %s %s input %s", next.ID, next.Status, next.Input)
	}
	if again := p.PullRun(t, agent.ID, rt.RuntimeToken); again.ID != run.ID || again.InputText() != "four" {
		t.Fatalf("the runtime claimed %s with input %s", again.ID, again.Input)
	}
	// A structured answer, as the A2A endpoint gives one.
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "Which day?"}, "input_required": true}).Expect(t, http.StatusOK)
	data := reply(run.ID, map[string]any{"input": map[string]any{"text": "friday", "data": map[string]any{"day": 5}}}).Expect(t, http.StatusOK).Run(t)
	var stored struct {
		Data struct {
			Day int `json:"day"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data.Input, &stored); err != nil || data.InputText() != "friday" || stored.Data.Day != 5 {
		t.Fatalf("structured answer stored as %s", data.Input)
	}
}

// TestReply_TheAnswerCarriesTheEarlierTurns: a person's answer reaches the
// agent with the conversation so far in input.history (the request, each
// question, each earlier answer), as an A2A caller's answer does, so an
// agent without memory of its own does not ask again.
func TestReply_TheAnswerCarriesTheEarlierTurns(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("asker")
	rt := p.OnlineRuntime(t, agent.ID)
	run := p.CreateTask(agent.ID, "book a table")
	ask := func(question string) {
		t.Helper()
		p.PullRun(t, agent.ID, rt.RuntimeToken)
		p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{
			"output": map[string]any{"text": question}, "input_required": true,
		}).Expect(t, http.StatusOK)
	}
	answer := func(text string) {
		t.Helper()
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/input", Owner: true,
			JSON: map[string]any{"text": text}}).Expect(t, http.StatusOK)
	}
	history := func() string {
		t.Helper()
		var in struct {
			Text    string `json:"text"`
			History []struct {
				Role string `json:"role"`
				Text string `json:"text"`
			} `json:"history"`
		}
		got := p.GetTask(run.ID)
		if err := json.Unmarshal(got.Input, &in); err != nil {
			t.Fatalf("input %s: %v", got.Input, err)
		}
		var s string
		for _, h := range in.History {
			s += h.Role + ":" + h.Text + " | "
		}
		return s + "now:" + in.Text
	}
	ask("For how many?")
	answer("four")
	if got, want := history(), "user:book a table | agent:For how many? | now:four"; got != want {
		t.Fatalf("after one answer the input is %q, want %q", got, want)
	}
	ask("Which day?")
	answer("friday")
	if got, want := history(), "user:book a table | agent:For how many? | user:four | agent:Which day? | now:friday"; got != want {
		t.Fatalf("after two answers the input is %q, want %q", got, want)
	}
}
