package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// A run canceled on the platform while it runs is stopped on the machine
// within about a second: the runtime drops the adapter request, the adapter
// stops the host and its child, the ledger records task_canceled, and the
// run stays canceled. Over both transports.
func TestCancel_RunningTaskStopsHostProcessesAndStaysCanceled(t *testing.T) {
	eachTransport(t, func(t *testing.T, l *lab, transport string) {
		p := l.startPlatform(platformOptions{})
		pt := p.forTest(t)
		pidDir := t.TempDir()
		c := l.connect(p, l.startAdapter("command", longHost(t, pidDir)).Endpoint, "--transport", transport)
		run, pids := startLongRun(t, pt, c, pidDir, "long job")

		canceled := time.Now()
		cancelTask(t, pt, run.ID)
		// The adapter gives the host 0.5s (--kill-grace) to stop before SIGKILL.
		waitGone(t, pids, 2*time.Second)
		t.Logf("host and child gone %s after the cancel", time.Since(canceled).Round(10*time.Millisecond))
		c.m.waitLedger(c.AgentID, waitStart, func(e ledgerEntry) bool { return e.TaskRunID == run.ID && e.Event == "task_canceled" })

		// task_canceled is the runtime's last word on the run: whatever it
		// would have reported is behind it.
		got := pt.GetTask(run.ID)
		if got.Status != mesh.StatusCanceled {
			t.Errorf("run is %s after the runtime stopped it, want canceled; error %+v", got.Status, got.Error)
		}
		evs := ledgerEvents(c.m.ledger(c.AgentID), run.ID)
		for _, e := range []string{"task_failed", "task_completed", "report_failed", "report_pending"} {
			if slices.Contains(evs, e) {
				t.Errorf("the ledger records %s for the canceled run: %v", e, evs)
			}
		}
		// The runtime and the adapter are free for the next run.
		next, nextPids := startLongRun(t, pt, c, pidDir, "next")
		cancelTask(t, pt, next.ID)
		waitGone(t, nextPids, 2*time.Second)
	})
}

// Cancellations still arrive within about a second after the platform
// restarted under a running runtime: the runtime follows them again by
// itself. The lease is long, so renewals (which would also notice the
// cancellation, a third of a lease later) cannot stand in for that.
func TestCancel_AfterPlatformRestartStillStopsHostWithinASecond(t *testing.T) {
	eachTransport(t, func(t *testing.T, l *lab, transport string) {
		p := l.startPlatform(platformOptions{lease: time.Minute})
		pt := p.forTest(t)
		pidDir := t.TempDir()
		c := l.connect(p, l.startAdapter("command", longHost(t, pidDir)).Endpoint, "--transport", transport)

		p.stop()
		p.start()
		pt = p.forTest(t)
		run, pids := startLongRun(t, pt, c, pidDir, "long job")
		canceled := time.Now()
		cancelTask(t, pt, run.ID)
		waitGone(t, pids, 2*time.Second)
		t.Logf("host and child gone %s after the cancel", time.Since(canceled).Round(10*time.Millisecond))
		c.m.waitLedger(c.AgentID, waitStart, func(e ledgerEntry) bool { return e.TaskRunID == run.ID && e.Event == "task_canceled" })
	})
}
