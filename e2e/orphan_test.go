package e2e

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// longHost is a fake agent CLI that works until it is stopped. It records
// its pid and its child's in pidDir/<task_run_id>; the child, as background
// commands of a non-interactive shell do, ignores SIGINT, so stopping it
// takes the adapter's SIGKILL. Both end by themselves once pidDir is removed
// at the end of the test, so a failed test leaves nothing running.
func longHost(t *testing.T, pidDir string) string {
	return script(t, `
( while [ -d '`+pidDir+`' ]; do sleep 0.1; done ) &
echo $$ $! > '`+pidDir+`'/"$A2A_TASK_RUN_ID"
wait
`)
}

// startLongRun creates a task for c, whose adapter runs longHost(pidDir),
// and waits until it runs and its host has recorded its own pid and its
// child's, which it returns with the run.
func startLongRun(t *testing.T, pt *meshtest.Platform, c *connected, pidDir, text string) (mesh.TaskRun, []int) {
	t.Helper()
	run := c.task(text)
	waitStatus(t, pt, run.ID, mesh.StatusRunning, waitStart)
	return run, readPids(t, filepath.Join(pidDir, run.ID), 2)
}

// Seed 001 §9 "No orphan": a runtime killed with SIGKILL mid-task cannot
// report; the platform fails the run with RUNTIME_LOST once the lease runs
// out, and the adapter, seeing the request dropped, stops the host.
func TestNoOrphan_RuntimeKilledMidTaskFailsRunWithRuntimeLostAndStopsHost(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	pidDir := t.TempDir()
	c := l.connect(p, l.startAdapter("command", longHost(t, pidDir)).Endpoint)
	run, pids := startLongRun(t, p.Platform, c, pidDir, "long job")

	c.rt.kill()
	killed := time.Now()
	// The lease runs from the last renewal, a third of a lease before the
	// kill at most; the reaper looks every tenth of a lease.
	ended := waitEnded(t, p.Platform, run.ID, mesh.StatusFailed, testLease+3*time.Second)
	wantError(t, ended, mesh.ReasonRuntimeLost, "")
	t.Logf("run failed %s after the runtime was killed (lease %s)", time.Since(killed).Round(10*time.Millisecond), testLease)
	if ended.Error.Details["runtime_id"] != c.RuntimeID {
		t.Errorf("RUNTIME_LOST details %v do not name runtime %s", ended.Error.Details, c.RuntimeID)
	}
	// The adapter saw the request drop and stopped the host (0.5s kill grace).
	waitGone(t, pids, 5*time.Second)
}

// Seed 001 §9 "No orphan": an adapter killed with SIGKILL mid-task fails the
// run with an adapter connection error, and the runtime goes on working.
func TestNoOrphan_AdapterKilledMidTaskFailsRunWithConnectionError(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	pidDir := t.TempDir()
	ad := l.startAdapter("command", longHost(t, pidDir))
	c := l.connect(p, ad.Endpoint)
	run, pids := startLongRun(t, p.Platform, c, pidDir, "long job")

	ad.kill()
	// The kernel kills the host process when its adapter dies (Linux
	// parent-death signal), so it does not run on unattended.
	waitGone(t, pids[:1], 5*time.Second)
	ended := waitEnded(t, p.Platform, run.ID, mesh.StatusFailed, waitStart)
	if code := ended.Error.Code; code != "ADAPTER_CONNECTION_LOST" && code != "ADAPTER_UNREACHABLE" {
		t.Errorf("run failed with %s (%s), want ADAPTER_CONNECTION_LOST or ADAPTER_UNREACHABLE", code, ended.Error.Message)
	}
	if !c.rt.running() {
		t.Fatalf("the runtime exited when its adapter died: %s", c.rt.exitText())
	}
	// With the adapter still gone the runtime claims nothing: the next run
	// waits in the queue, and the platform shows the runtime not ready.
	c.rt.waitOutput(t, "local adapter unreachable: no task runs are claimed until it answers", waitStart)
	next := c.task("next")
	never(t, 2*time.Second, func() bool {
		return p.GetTask(next.ID).Status != mesh.StatusPending
	}, func() string { return "the next run left the queue while the adapter was gone" })
	if v := p.RuntimeView(t, c.AgentID, c.RuntimeID); v.Status != mesh.PresenceOnline || !v.NotReady {
		t.Errorf("runtime without its adapter is %s, not ready %v; want online and not ready", v.Status, v.NotReady)
	}
}

// A runtime killed mid-task and started again at once (as a service manager
// does) is the same runtime to the platform, but the new process knows
// nothing of the old one's run: that run must still end, failed with
// RUNTIME_LOST, rather than be kept running by the new process's heartbeats.
func TestNoOrphan_RunOfKilledRuntimeEndsEvenWhenRuntimeRestartsAtOnce(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	pidDir := t.TempDir()
	c := l.connect(p, l.startAdapter("command", longHost(t, pidDir)).Endpoint)
	run, _ := startLongRun(t, p.Platform, c, pidDir, "long job")

	c.rt.kill()
	c.m.startRuntime()
	ended := waitEnded(t, p.Platform, run.ID, mesh.StatusFailed, waitLost)
	wantError(t, ended, mesh.ReasonRuntimeLost, "")
	if v := p.RuntimeView(t, c.AgentID, c.RuntimeID); v.Status != mesh.PresenceOnline {
		t.Errorf("the restarted runtime is %s", v.Status)
	}
}
