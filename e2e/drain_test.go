package e2e

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// SIGTERM stops claiming at once, lets the running task finish within the
// drain grace, and the runtime exits 0; a run created meanwhile stays pending
// for another runtime. Over both transports.
func TestDrain_SIGTERMFinishesRunningTaskStopsClaimingAndExits0(t *testing.T) {
	eachTransport(t, func(t *testing.T, l *lab, transport string) {
		p := l.startPlatform(platformOptions{})
		pt := p.forTest(t)
		dir := t.TempDir()
		host := script(t, `
d='`+dir+`'
cat >> "$d/got"
echo >> "$d/got"
`+untilFile(filepath.Join(dir, "go"))+`
echo "finished during the drain"
`)
		// Two workers: one is idle, so only the drain keeps it from claiming.
		c := l.connect(p, l.startAdapter("command", host).Endpoint, "--transport", transport, "--concurrency", "2", "--shutdown-grace", "30s")
		first := c.task("first")
		waitStatus(t, pt, first.ID, mesh.StatusRunning, waitStart)
		waitFile(t, filepath.Join(dir, "got"))

		c.rt.signal(t, syscall.SIGTERM)
		c.rt.waitOutput(t, "stopping: no new task runs are claimed", waitStart)
		second := c.task("second")
		// A claim takes milliseconds; the idle worker would have taken it
		// and handed it to the adapter by now. (Over HTTP the platform may
		// still claim it for the long poll the runtime abandoned, and then
		// gives it straight back: the runtime is not there to take it.)
		never(t, 1500*time.Millisecond, func() bool {
			return len(ledgerEvents(c.m.ledger(c.AgentID), second.ID)) > 0 || strings.Contains(meshtest.ReadFile(filepath.Join(dir, "got")), "second")
		}, func() string {
			return "the draining runtime took a new run: " + meshtest.ReadFile(c.m.ledgerPath(c.AgentID))
		})
		if got := pt.GetTask(second.ID); got.Status != mesh.StatusPending {
			t.Errorf("the run created during the drain is %s, want pending", got.Status)
		}

		touch(t, filepath.Join(dir, "go"))
		if code := c.rt.waitExit(t, waitStart); code != 0 {
			t.Errorf("the drained runtime exited %d, want 0", code)
		}
		done := waitEnded(t, pt, first.ID, mesh.StatusCompleted, waitStart)
		if outputOf(t, done)["text"] != "finished during the drain" {
			t.Errorf("output %s", done.Output)
		}
		if got := pt.GetTask(second.ID); got.Status != mesh.StatusPending || got.RuntimeID != "" || got.Attempt != 0 {
			t.Errorf("the run created during the drain is %s (runtime %q, attempt %d), want pending for another runtime", got.Status, got.RuntimeID, got.Attempt)
		}
		if evs := ledgerEvents(c.m.ledger(c.AgentID), second.ID); len(evs) != 0 {
			t.Errorf("the ledger records %v for the run created during the drain", evs)
		}
		if evs := ledgerEvents(c.m.ledger(c.AgentID), ""); evs[len(evs)-1] != "runtime_stopped" {
			t.Errorf("the ledger does not end with runtime_stopped: %v", evs)
		}
		// The next runtime takes the run the drain left at once, not after
		// the queue's 30s redelivery of a message sent to a dead fetch.
		c.m.startRuntime("--transport", transport)
		waitEnded(t, pt, second.ID, mesh.StatusCompleted, 10*time.Second)
	})
}

// A second Ctrl-C during the drain stops at once: the running task is
// aborted and failed with RUNTIME_SHUTDOWN without waiting for the grace.
func TestDrain_SecondInterruptStopsAtOnce(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	pidDir := t.TempDir()
	c := l.connect(p, l.startAdapter("command", longHost(t, pidDir)).Endpoint, "--shutdown-grace", "5m")
	run, pids := startLongRun(t, p.Platform, c, pidDir, "endless")

	c.rt.signal(t, syscall.SIGINT)
	c.rt.waitOutput(t, "stopping: no new task runs are claimed", waitStart)
	c.rt.signal(t, syscall.SIGINT)
	if code := c.rt.waitExit(t, waitStart); code != 0 {
		t.Errorf("the runtime exited %d after the second interrupt, want 0", code)
	}
	wantError(t, waitEnded(t, p.Platform, run.ID, mesh.StatusFailed, waitStart), "RUNTIME_SHUTDOWN", "")
	waitGone(t, pids, waitStart)
}

// A task still running when the drain grace runs out is aborted and failed
// with RUNTIME_SHUTDOWN; its host processes are stopped.
func TestDrain_TaskLongerThanGraceFailsWithRuntimeShutdown(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	pidDir := t.TempDir()
	c := l.connect(p, l.startAdapter("command", longHost(t, pidDir)).Endpoint, "--shutdown-grace", "1s")
	run, pids := startLongRun(t, p.Platform, c, pidDir, "endless")

	stopped := time.Now()
	c.rt.signal(t, syscall.SIGTERM)
	if code := c.rt.waitExit(t, waitStart); code != 0 {
		t.Errorf("the runtime exited %d after its drain, want 0", code)
	}
	if took := time.Since(stopped); took < time.Second {
		t.Errorf("the runtime exited %s after SIGTERM, before its 1s drain grace", took)
	}
	ended := waitEnded(t, p.Platform, run.ID, mesh.StatusFailed, waitStart)
	wantError(t, ended, "RUNTIME_SHUTDOWN", "")
	waitGone(t, pids, waitStart)
	meshtest.Eventually(t, waitStart, func() bool {
		evs := ledgerEvents(c.m.ledger(c.AgentID), run.ID)
		return len(evs) > 0 && evs[len(evs)-1] == "task_failed"
	}, func() string { return "the ledger does not end the run with task_failed" })
}
