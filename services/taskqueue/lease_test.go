package taskqueue_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

const testLease = time.Second

// TestClaim_ExpiredLeaseFailsTaskWithRuntimeLost: a runtime that claims a
// run and goes silent does not leave it running (design §3, "No orphans").
func TestClaim_ExpiredLeaseFailsTaskWithRuntimeLost(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = testLease; c.HeartbeatTimeout = 30 * time.Second })
	agent := p.CreateAgent("vanishing")
	rt := p.OnlineRuntime(t, agent.ID)
	run := p.CreateTask(agent.ID, "x")
	events := p.StreamEvents(t, url.Values{"task_run_id": {run.ID}})
	claimed := p.PullRun(t, agent.ID, rt.RuntimeToken)
	if claimed.LeaseExpiresAt == nil || claimed.LeaseExpiresAt.Sub(*claimed.ClaimedAt).Round(10*time.Millisecond) != testLease {
		t.Fatalf("claimed run's lease %v from %v, want %s", claimed.LeaseExpiresAt, claimed.ClaimedAt, testLease)
	}

	failed := p.WaitTask(run.ID, testLease+3*time.Second, meshtest.StatusIs(mesh.StatusFailed))
	if failed.Error == nil || failed.Error.Code != mesh.ReasonRuntimeLost || failed.Error.Details["runtime_id"] != rt.RuntimeID {
		t.Fatalf("lost run's error: %+v, want RUNTIME_LOST naming the runtime", failed.Error)
	}
	if failed.EndedAt == nil || failed.EndedAt.Before(*claimed.LeaseExpiresAt) {
		t.Fatalf("run failed at %v, before its lease ran out at %v", failed.EndedAt, claimed.LeaseExpiresAt)
	}
	if failed.Attempt != 1 || failed.LeaseExpiresAt != nil {
		t.Fatalf("lost run: attempt %d lease %v", failed.Attempt, failed.LeaseExpiresAt)
	}
	evs := events.Until(t, 5*time.Second, meshtest.TypeIs("task_run.failed", run.ID))
	if len(evs) != 2 || evs[0].Type != mesh.EventTaskRunClaimed {
		t.Fatalf("events: %v, want claimed then failed", evs)
	}

	// The runtime's late report is refused and changes nothing.
	e := p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "too late"}}).
		ExpectError(t, http.StatusConflict, mesh.CodeInvalidTransition)
	if e.Error.Status != string(mesh.StatusFailed) {
		t.Fatalf("late complete: error.status %q, want failed", e.Error.Status)
	}
	if got := p.GetTask(run.ID); got.Status != mesh.StatusFailed || got.Output != nil {
		t.Fatalf("after the late complete: %s with output %s", got.Status, got.Output)
	}
}

// TestClaim_ExpiredLeaseRequeuesWhileAttemptsRemain: with a retry policy the
// run goes back to pending, is claimed again as attempt 2, and the first
// attempt's reports are stale.
func TestClaim_ExpiredLeaseRequeuesWhileAttemptsRemain(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = testLease; c.HeartbeatTimeout = 30 * time.Second })
	agent := p.CreateAgent("retrying")
	rt := p.OnlineRuntime(t, agent.ID)
	run := p.CreateTaskWith(t, map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "x"}, "max_attempts": 2}).
		Expect(t, http.StatusCreated).Run(t)
	events := p.StreamEvents(t, url.Values{"task_run_id": {run.ID}})
	if first := p.PullRun(t, agent.ID, rt.RuntimeToken); first.Attempt != 1 {
		t.Fatalf("first claim is attempt %d", first.Attempt)
	}
	p.Report(t, run.ID, "progress", rt.RuntimeToken, map[string]any{"attempt": 1, "message": "started"}).Expect(t, http.StatusOK)

	requeued := p.WaitTask(run.ID, testLease+3*time.Second, meshtest.StatusIs(mesh.StatusPending, mesh.StatusFailed))
	if requeued.Status != mesh.StatusPending || requeued.Attempt != 1 || requeued.RuntimeID != "" || requeued.Progress != nil || requeued.Error != nil {
		t.Fatalf("after the lost lease: %+v, want pending, attempt still 1, no runtime or progress", requeued)
	}
	evs := events.Until(t, 5*time.Second, meshtest.TypeIs("task_run.requeued", run.ID))
	if got := len(evs); got != 3 {
		t.Fatalf("events before the requeue: %d, want claimed, progress, requeued", got)
	}

	// The re-queued message follows the record's change; a long poll waits for it.
	second := p.Pull(t, agent.ID, rt.RuntimeToken, "5s").Expect(t, http.StatusOK).Run(t)
	if second.ID != run.ID || second.Attempt != 2 || second.Status != mesh.StatusRunning {
		t.Fatalf("second claim: %s attempt %d %s", second.ID, second.Attempt, second.Status)
	}
	for _, op := range []string{"progress", "complete", "fail", "renew"} {
		body := map[string]any{"attempt": 1, "message": "stale", "output": map[string]any{"error": "stale", "text": "stale"}}
		e := p.Report(t, run.ID, op, rt.RuntimeToken, body).ExpectError(t, http.StatusConflict, mesh.CodeStaleAttempt)
		if e.Error.Status != string(mesh.StatusRunning) {
			t.Errorf("stale %s: error.status %q, want running", op, e.Error.Status)
		}
	}
	// No stale report moved attempt 2's lease.
	if got := p.GetTask(run.ID); got.LeaseExpiresAt == nil || !got.LeaseExpiresAt.Equal(*second.LeaseExpiresAt) {
		t.Fatalf("attempt 2's lease %v after stale reports, want %v", got.LeaseExpiresAt, second.LeaseExpiresAt)
	}
	done := p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"attempt": 2, "output": map[string]any{"text": "second time"}}).
		Expect(t, http.StatusOK).Run(t)
	if done.Status != mesh.StatusCompleted || done.Attempt != 2 {
		t.Fatalf("attempt 2 complete: %s attempt %d", done.Status, done.Attempt)
	}
}

// TestClaim_LastAttemptLostFailsWithRuntimeLost: retries end; the run does
// not bounce between pending and running forever.
func TestClaim_LastAttemptLostFailsWithRuntimeLost(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = testLease; c.HeartbeatTimeout = 30 * time.Second })
	agent := p.CreateAgent("retrying")
	rt := p.OnlineRuntime(t, agent.ID)
	run := p.CreateTaskWith(t, map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "x"}, "max_attempts": 2}).
		Expect(t, http.StatusCreated).Run(t)
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	p.WaitTask(run.ID, testLease+3*time.Second, meshtest.StatusIs(mesh.StatusPending))
	if again := p.Pull(t, agent.ID, rt.RuntimeToken, "5s").Expect(t, http.StatusOK).Run(t); again.Attempt != 2 {
		t.Fatalf("second claim is attempt %d", again.Attempt)
	}
	failed := p.WaitTask(run.ID, testLease+3*time.Second, meshtest.StatusIs(mesh.StatusFailed, mesh.StatusPending))
	if failed.Status != mesh.StatusFailed || failed.Error == nil || failed.Error.Code != mesh.ReasonRuntimeLost || failed.Attempt != 2 {
		t.Fatalf("after the last lease was lost: %+v", failed)
	}
	p.Pull(t, agent.ID, rt.RuntimeToken, "").Expect(t, http.StatusNoContent)
}

// TestClaim_RenewalKeepsTheRunRunning: renew, heartbeat and progress each
// extend the lease, so a working runtime keeps its run for many lease
// periods; when the renewals stop, the lease runs out.
func TestClaim_RenewalKeepsTheRunRunning(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = testLease; c.HeartbeatTimeout = 30 * time.Second })
	type worker struct {
		how   string
		rt    meshtest.Attached
		run   mesh.TaskRun
		renew func()
	}
	var workers []*worker
	for _, how := range []string{"renew", "heartbeat", "progress"} {
		agent := p.CreateAgent(how)
		w := &worker{how: how}
		w.rt, w.run = p.HeldRun(t, agent.ID, how)
		switch how {
		case "renew":
			w.renew = func() { p.Report(t, w.run.ID, "renew", w.rt.RuntimeToken, nil).Expect(t, http.StatusOK) }
		case "heartbeat":
			w.renew = func() { p.Heartbeat(t, w.rt.RuntimeToken) }
		case "progress":
			w.renew = func() {
				p.Report(t, w.run.ID, "progress", w.rt.RuntimeToken, map[string]any{"message": "still going"}).Expect(t, http.StatusOK)
			}
		}
		workers = append(workers, w)
	}
	// Renew at a quarter of the lease for three and a half lease periods.
	// The runs staying running over that window is what is being shown.
	tick := time.NewTicker(testLease / 4)
	defer tick.Stop()
	until := time.Now().Add(7 * testLease / 2)
	for time.Now().Before(until) {
		<-tick.C
		for _, w := range workers {
			w.renew()
		}
		for _, w := range workers {
			if got := p.GetTask(w.run.ID); got.Status != mesh.StatusRunning {
				t.Fatalf("%s: run is %s (%+v) while its runtime renews", w.how, got.Status, got.Error)
			}
		}
	}
	// Without renewals every lease runs out.
	for _, w := range workers {
		got := p.WaitTask(w.run.ID, testLease+3*time.Second, meshtest.StatusIs(mesh.StatusFailed))
		if got.Error == nil || got.Error.Code != mesh.ReasonRuntimeLost {
			t.Fatalf("%s: after renewals stopped: %+v", w.how, got.Error)
		}
	}
}
