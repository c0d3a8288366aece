package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestCreate_TimeoutOutOfRangeIsRefused: timeout_seconds and deadline are
// bounded by mesh.MaxRunTimeout. A value past it (including ones whose
// duration would overflow and wrap into the past) is 400 with the JSON
// error body, and no run is created; the maximum itself is accepted.
func TestCreate_TimeoutOutOfRangeIsRefused(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("bounded")
	maxSeconds := int64(mesh.MaxRunTimeout / time.Second)
	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"overflowing into the past", map[string]any{"timeout_seconds": int64(9223372037)}},
		{"10^18 seconds", map[string]any{"timeout_seconds": int64(1_000_000_000_000_000_000)}},
		{"largest int64", map[string]any{"timeout_seconds": int64(9223372036854775807)}},
		{"one second past the maximum", map[string]any{"timeout_seconds": maxSeconds + 1}},
		{"negative", map[string]any{"timeout_seconds": -1}},
		{"deadline past the maximum", map[string]any{"deadline": time.Now().Add(mesh.MaxRunTimeout + time.Hour).UTC().Format(time.RFC3339)}},
	} {
		tc.body["target_agent_id"] = agent.ID
		tc.body["input"] = map[string]any{"text": tc.name}
		e := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs", Owner: true, JSON: tc.body}).
			ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
		if tc.name != "negative" && !strings.Contains(e.Error.Message, "604800") {
			t.Errorf("%s: the refusal does not name the maximum: %q", tc.name, e.Error.Message)
		}
	}
	var list struct {
		TaskRuns []mesh.TaskRun `json:"task_runs"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?agent_id=" + agent.ID, Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.TaskRuns) != 0 {
		t.Fatalf("refused creates left %d runs", len(list.TaskRuns))
	}

	before := time.Now()
	run := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs", Owner: true, JSON: map[string]any{
		"target_agent_id": agent.ID, "input": map[string]any{"text": "a week"}, "timeout_seconds": maxSeconds,
	}}).Expect(t, http.StatusCreated).Run(t)
	if run.Deadline == nil || run.Deadline.Before(before.Add(mesh.MaxRunTimeout-time.Minute)) || run.Deadline.After(time.Now().Add(mesh.MaxRunTimeout)) {
		t.Fatalf("deadline of the longest timeout: %v", run.Deadline)
	}
}
