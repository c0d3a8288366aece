package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestFail_ReportedErrorEndsRunFailedWithItsCode checks the accepted shapes of
// seed 001's fail body: output.error as text or as an object, with an
// optional machine code in output.code, output.error_code or output.error.code.
func TestFail_ReportedErrorEndsRunFailedWithItsCode(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("failing")
	rt := p.OnlineRuntime(t, agent.ID)

	cases := []struct {
		name        string
		output      string
		wantCode    string
		wantMessage string
	}{
		{"text with code", `{"error":"boom","code":"MY_CODE"}`, "MY_CODE", "boom"},
		{"text without code", `{"error":"it broke"}`, mesh.ReasonTaskFailed, "it broke"},
		{"error_code", `{"error":"nope","error_code":"E_42"}`, "E_42", "nope"},
		{"object", `{"error":{"message":"deep","code":"INNER"}}`, "INNER", "deep"},
		{"object without code", `{"error":{"message":"plain"},"stderr":"trace"}`, mesh.ReasonTaskFailed, "plain"},
	}
	for _, tc := range cases {
		run := p.CreateTask(agent.ID, tc.name)
		if pulled := p.PullRun(t, agent.ID, rt.RuntimeToken); pulled.ID != run.ID {
			t.Fatalf("%s: pulled %s, want %s", tc.name, pulled.ID, run.ID)
		}
		body := map[string]any{"output": json.RawMessage(tc.output)}
		answered := p.Report(t, run.ID, "fail", rt.RuntimeToken, body).Expect(t, http.StatusOK).Run(t)
		for _, got := range []mesh.TaskRun{answered, p.GetTask(run.ID)} {
			if got.Status != mesh.StatusFailed || got.Error == nil || got.EndedAt == nil {
				t.Fatalf("%s: status %s error %+v ended %v, want failed with an error", tc.name, got.Status, got.Error, got.EndedAt)
			}
			if got.Error.Code != tc.wantCode || got.Error.Message != tc.wantMessage {
				t.Errorf("%s: error %s / %q, want %s / %q", tc.name, got.Error.Code, got.Error.Message, tc.wantCode, tc.wantMessage)
			}
			var out, want any
			_ = json.Unmarshal(got.Output, &out)
			_ = json.Unmarshal([]byte(tc.output), &want)
			if meshtest.JSON(out) != meshtest.JSON(want) {
				t.Errorf("%s: output kept as %s, want %s", tc.name, got.Output, tc.output)
			}
		}
	}
}

// TestFail_MalformedBodiesAreRejectedAndLeaveTheRunRunning sends fail bodies a
// runtime might get wrong; each is a 400 and the run stays the runtime's.
func TestFail_MalformedBodiesAreRejectedAndLeaveTheRunRunning(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("failing")
	rt, run := p.HeldRun(t, agent.ID, "x")

	bodies := map[string]string{
		"empty body":            ``,
		"empty object":          `{}`,
		"output is text":        `{"output":"boom"}`,
		"output is an array":    `{"output":["boom"]}`,
		"output without error":  `{"output":{"text":"boom"}}`,
		"empty error":           `{"output":{"error":""}}`,
		"error is a number":     `{"output":{"error":42}}`,
		"error object, no text": `{"output":{"error":{"code":"X"}}}`,
		"lowercase code":        `{"output":{"error":"boom","code":"my_code"}}`,
		"code with spaces":      `{"output":{"error":"boom","code":"MY CODE"}}`,
		"overlong code":         `{"output":{"error":"boom","code":"` + strings.Repeat("A", 65) + `"}}`,
		"malformed JSON":        `{"output":{"error":"boom"`,
		"trailing data":         `{"output":{"error":"boom"}} {}`,
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			resp := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/fail",
				RuntimeToken: rt.RuntimeToken, Body: []byte(body), ContentType: "application/json"})
			resp.ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
		})
	}
	if got := p.GetTask(run.ID); got.Status != mesh.StatusRunning || got.Error != nil || got.Output != nil {
		t.Fatalf("after rejected fail reports: status %s error %+v output %s, want still running and untouched", got.Status, got.Error, got.Output)
	}
	p.Report(t, run.ID, "fail", rt.RuntimeToken, map[string]any{"output": map[string]any{"error": "finally"}}).Expect(t, http.StatusOK)
}
