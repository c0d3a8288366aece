package taskqueue_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

func cancel(t *testing.T, p *meshtest.Platform, runID string) *meshtest.Response {
	t.Helper()
	return p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + runID + "/cancel", Owner: true, JSON: map[string]any{"reason": "changed my mind"}})
}

// TestTransition_IllegalMovesAreConflictsNamingTheCurrentStatus drives each
// move the state machine refuses through the API.
func TestTransition_IllegalMovesAreConflictsNamingTheCurrentStatus(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("strict")
	rt := p.OnlineRuntime(t, agent.ID)

	// Reports on a pending run: it is nobody's yet.
	pending := p.CreateTask(agent.ID, "pending")
	for _, op := range []string{"complete", "fail", "progress"} {
		e := p.Report(t, pending.ID, op, rt.RuntimeToken, map[string]any{"output": map[string]any{"error": "x"}}).
			ExpectError(t, http.StatusConflict, mesh.CodeInvalidTransition)
		if e.Error.Status != string(mesh.StatusPending) {
			t.Errorf("%s on a pending run: error.status %q", op, e.Error.Status)
		}
	}
	e := p.Report(t, pending.ID, "renew", rt.RuntimeToken, nil).ExpectError(t, http.StatusConflict, mesh.CodeStaleAttempt)
	if e.Error.Status != string(mesh.StatusPending) {
		t.Errorf("renew of a pending run: error.status %q", e.Error.Status)
	}
	if got := p.GetTask(pending.ID); got.Status != mesh.StatusPending || got.Output != nil {
		t.Fatalf("pending run after refused reports: %+v", got)
	}

	// Cancel of a completed run.
	if got := p.PullRun(t, agent.ID, rt.RuntimeToken); got.ID != pending.ID {
		t.Fatalf("pulled %s", got.ID)
	}
	p.Report(t, pending.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "ok"}}).Expect(t, http.StatusOK)
	e = cancel(t, p, pending.ID).ExpectError(t, http.StatusConflict, mesh.CodeInvalidTransition)
	if e.Error.Status != string(mesh.StatusCompleted) {
		t.Fatalf("cancel of a completed run: error.status %q, want completed", e.Error.Status)
	}
	if got := p.GetTask(pending.ID); got.Status != mesh.StatusCompleted || got.Error != nil {
		t.Fatalf("completed run after the refused cancel: %s %+v", got.Status, got.Error)
	}
	// And of a canceled one.
	other := p.CreateTask(agent.ID, "twice")
	cancel(t, p, other.ID).Expect(t, http.StatusOK)
	if e := cancel(t, p, other.ID).ExpectError(t, http.StatusConflict, mesh.CodeInvalidTransition); e.Error.Status != string(mesh.StatusCanceled) {
		t.Fatalf("second cancel: error.status %q", e.Error.Status)
	}
}

// TestCancel_PendingRunIsNeverHandedOut: a canceled run leaves the queue.
func TestCancel_PendingRunIsNeverHandedOut(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("fickle")
	canceled := p.CreateTask(agent.ID, "never mind")
	kept := p.CreateTask(agent.ID, "do this")
	events := p.StreamEvents(t, url.Values{"task_run_id": {canceled.ID}})
	run := cancel(t, p, canceled.ID).Expect(t, http.StatusOK).Run(t)
	if run.Status != mesh.StatusCanceled || run.Error == nil || run.Error.Code != mesh.ReasonCanceled || run.Error.Message != "changed my mind" || run.EndedAt == nil {
		t.Fatalf("canceled run: %+v", run)
	}
	if ev := events.Next(t, 5*time.Second); ev.Type != mesh.EventTaskRunCanceled {
		t.Fatalf("event after cancel: %s", ev.Type)
	}
	rt := p.OnlineRuntime(t, agent.ID)
	if got := p.PullRun(t, agent.ID, rt.RuntimeToken); got.ID != kept.ID {
		t.Fatalf("pulled %s, want the run that was not canceled (%s)", got.ID, kept.ID)
	}
	// Waiting a while brings nothing either.
	p.Pull(t, agent.ID, rt.RuntimeToken, "1s").Expect(t, http.StatusNoContent)
	if got := p.GetTask(canceled.ID); got.Status != mesh.StatusCanceled || got.Attempt != 0 || got.RuntimeID != "" {
		t.Fatalf("canceled run after pulls: %+v", got)
	}
}

// TestCancel_RunningRunRefusesTheRuntimesLaterReports: the runtime learns on
// its next report (or renewal) that the run is no longer its.
func TestCancel_RunningRunRefusesTheRuntimesLaterReports(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("interrupted")
	rt, run := p.HeldRun(t, agent.ID, "long job")
	p.Report(t, run.ID, "progress", rt.RuntimeToken, map[string]any{"message": "working"}).Expect(t, http.StatusOK)

	canceled := cancel(t, p, run.ID).Expect(t, http.StatusOK).Run(t)
	if canceled.Status != mesh.StatusCanceled || canceled.LeaseExpiresAt != nil || canceled.RuntimeID != rt.RuntimeID {
		t.Fatalf("canceled running run: %+v", canceled)
	}
	for _, op := range []string{"complete", "fail", "progress"} {
		e := p.Report(t, run.ID, op, rt.RuntimeToken, map[string]any{"output": map[string]any{"error": "x", "text": "late"}}).
			ExpectError(t, http.StatusConflict, mesh.CodeInvalidTransition)
		if e.Error.Status != string(mesh.StatusCanceled) {
			t.Errorf("%s after cancel: error.status %q", op, e.Error.Status)
		}
	}
	if e := p.Report(t, run.ID, "renew", rt.RuntimeToken, nil).ExpectError(t, http.StatusConflict, mesh.CodeStaleAttempt); e.Error.Status != string(mesh.StatusCanceled) {
		t.Errorf("renew after cancel: error.status %q", e.Error.Status)
	}
	got := p.GetTask(run.ID)
	if got.Status != mesh.StatusCanceled || got.Output != nil || got.Error.Code != mesh.ReasonCanceled {
		t.Fatalf("after the runtime's late reports: %+v", got)
	}
}
