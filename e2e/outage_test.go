package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// Log lines of a runtime whose adapter goes away and comes back.
const (
	logAdapterDown = "local adapter unreachable: no task runs are claimed until it answers"
	logAdapterBack = "local adapter answering again: claiming task runs"
)

// startAdapterAt runs a2a-adapter with the command provider on addr.
func (l *lab) startAdapterAt(addr, workdir string, argv ...string) *adapterProc {
	l.t.Helper()
	args := append([]string{"--provider", "command", "--listen", addr, "--workdir", workdir,
		"--kill-grace", "500ms", "--log-level", "debug", "--"}, argv...)
	p := l.start("adapter", []string{"HOME=" + l.t.TempDir()}, bins.Adapter, args...)
	p.waitOutput(l.t, "a2a-adapter listening on http://", waitStart)
	m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(p.output())
	return &adapterProc{proc: p, Base: m[1], Endpoint: m[1] + "/run-task", Workdir: workdir}
}

// taskStream creates a task for an agent at every tick of the test's loop.
type taskStream struct {
	c   *connected
	ids []string
}

func (s *taskStream) add(n int, tick time.Duration) {
	s.c.m.l.t.Helper()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for i := 0; i < n; i++ {
		<-ticker.C
		s.ids = append(s.ids, s.c.task(fmt.Sprintf("task %d", len(s.ids)+1)).ID)
	}
}

// ended reports how many of the stream's runs ended, and describes those
// that ended otherwise than completed.
func (s *taskStream) ended(pt *meshtest.Platform) (int, []string) {
	n, bad := 0, []string(nil)
	for _, id := range s.ids {
		run := pt.GetTask(id)
		if !run.Status.Terminal() {
			continue
		}
		n++
		if run.Status != mesh.StatusCompleted {
			code := ""
			if run.Error != nil {
				code = run.Error.Code + ": " + run.Error.Message
			}
			bad = append(bad, fmt.Sprintf("%s %s (%s)", id, run.Status, code))
		}
	}
	return n, bad
}

// perStreamedTask is what waitAllEnded allows each run of a stream beside
// its timeout: the runs go through one host process at a time, and a
// process start takes a few hundred milliseconds on a loaded machine.
const perStreamedTask = time.Second

// waitAllEnded waits until every run of the stream ended and fails the test
// for each that did not complete. The wait is timeout, and perStreamedTask
// for each run.
func (s *taskStream) waitAllEnded(t *testing.T, pt *meshtest.Platform, timeout time.Duration) {
	t.Helper()
	var bad []string
	timeout += time.Duration(len(s.ids)) * perStreamedTask
	meshtest.Eventually(t, timeout, func() bool {
		var n int
		n, bad = s.ended(pt)
		return n == len(s.ids)
	}, func() string { return fmt.Sprintf("not every one of %d runs ended", len(s.ids)) })
	if len(bad) > 0 {
		t.Errorf("%d of %d runs did not complete:\n%s", len(bad), len(s.ids), strings.Join(bad, "\n"))
	}
}

// An adapter outage does not burn the queue: while the adapter is down
// (stopped for an upgrade, or crashed) the runtime claims nothing and waits
// for it, and a run it claimed just before the adapter went away goes back
// to the queue; once the adapter is back on its port every run completes.
func TestAdapterOutage_RestartUnderSteadyStreamFailsNoTask(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	addr := meshtest.FreeAddr(t)
	workdir := filepath.Join(t.TempDir(), "work")
	host := script(t, "cat >/dev/null; echo done")
	ad := l.startAdapterAt(addr, workdir, host)
	c := l.connect(p, ad.Endpoint)
	s := &taskStream{c: c}
	const tick = 40 * time.Millisecond

	s.add(10, tick)
	// A restart for an upgrade: SIGTERM lets the running task finish.
	ad.signal(t, syscall.SIGTERM)
	if code := ad.waitExit(t, waitStart); code != 0 {
		t.Fatalf("adapter exited %d after SIGTERM", code)
	}
	s.add(25, tick) // a second of tasks while nothing listens
	ad = l.startAdapterAt(addr, workdir, host)
	s.add(10, tick)
	s.waitAllEnded(t, p.Platform, waitLost)

	// A crash: SIGKILL while the queue is empty. The idle runtime notices
	// and the platform shows it online but not ready; then a second of tasks.
	ad.kill()
	v := waitReady(t, p.Platform, c, false)
	if v.Status != mesh.PresenceOnline || v.NotReadyReason == "" {
		t.Errorf("runtime with its adapter down is %s, not ready %q; want online with a reason", v.Status, v.NotReadyReason)
	}
	s.add(25, tick)
	ad = l.startAdapterAt(addr, workdir, host)
	s.add(10, tick)
	s.waitAllEnded(t, p.Platform, waitLost)
	waitReady(t, p.Platform, c, true)

	if !c.rt.running() {
		t.Fatalf("runtime exited: %s", c.rt.exitText())
	}
	out := c.rt.output()
	if n := strings.Count(out, logAdapterDown); n != 2 {
		t.Errorf("runtime logged %q %d times for 2 outages, want once each; output:\n%s", logAdapterDown, n, c.rt.shown(6000))
	}
	if n := strings.Count(out, logAdapterBack); n != 2 {
		t.Errorf("runtime logged %q %d times for 2 outages, want once each", logAdapterBack, n)
	}
	if strings.Contains(out, `"code":"ADAPTER_UNREACHABLE"`) {
		t.Errorf("runtime failed a run as unreachable; output:\n%s", c.rt.shown(6000))
	}
	t.Logf("%d runs completed; %d given back while the adapter was down", len(s.ids), strings.Count(out, "task run given back to the queue"))
}

// waitReady waits until the platform shows c's runtime online and ready
// (its adapter answers), or online and not ready.
func waitReady(t *testing.T, pt *meshtest.Platform, c *connected, ready bool) mesh.RuntimeView {
	t.Helper()
	var v mesh.RuntimeView
	meshtest.Eventually(t, waitStart, func() bool {
		v = pt.RuntimeView(t, c.AgentID, c.RuntimeID)
		return v.Status == mesh.PresenceOnline && v.NotReady == !ready
	}, func() string {
		return fmt.Sprintf("runtime %s is %s, not ready %v (%q); want ready %v", c.RuntimeID, v.Status, v.NotReady, v.NotReadyReason, ready)
	})
	return v
}

// Seed 000 still holds for an adapter that stays away: once the runtime
// stops waiting for it (--adapter-wait), a run it cannot deliver is given
// back to the queue 3 times and then failed with ADAPTER_UNREACHABLE, and a
// run near its deadline is failed at once rather than given back.
func TestAdapterOutage_UndeliverableRunFailsAfterGiveBacksOrNearItsDeadline(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	c := l.connect(p, "http://"+meshtest.FreeAddr(t)+"/run-task", "--adapter-wait", "100ms")

	run := waitEnded(t, p.Platform, c.task("anyone there?").ID, mesh.StatusFailed, waitLost)
	wantError(t, run, "ADAPTER_UNREACHABLE", "connection refused")
	events := ledgerEvents(c.m.ledger(c.AgentID), run.ID)
	if n := countOf(events, "task_given_back"); n != 3 {
		t.Errorf("run given back %d times before it failed, want 3; ledger %v", n, events)
	}

	soon := createTask(t, p.Platform, map[string]any{"target_agent_id": c.AgentID,
		"input": map[string]any{"text": "in a hurry"}, "timeout_seconds": 10})
	ended := waitEnded(t, p.Platform, soon.ID, mesh.StatusFailed, waitLost)
	wantError(t, ended, "ADAPTER_UNREACHABLE", "connection refused")
	if n := countOf(ledgerEvents(c.m.ledger(c.AgentID), soon.ID), "task_given_back"); n != 0 {
		t.Errorf("a run 10s from its deadline was given back %d times, want failed at once", n)
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}
