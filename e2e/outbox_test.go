package e2e

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// outboxStatus is what status --json says about the platform and the
// outbox.
type outboxStatus struct {
	Platform string `json:"platform_connection"`
	Backlog  *int   `json:"ledger_backlog"`
}

func statusOf(t *testing.T, m *machine) outboxStatus {
	t.Helper()
	res := m.cli("status", "--json")
	var st outboxStatus
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil || st.Backlog == nil {
		t.Fatalf("status --json has no ledger_backlog: %v\n%s", err, res)
	}
	return st
}

// slowHost is a fake agent CLI that writes started in dir and answers once
// go appears there.
func slowHost(t *testing.T, dir, answer string) string {
	return script(t, `
d='`+dir+`'
touch "$d/started"
`+untilFile(filepath.Join(dir, "go"))+`
echo "`+answer+`"
`)
}

// reportOwedDuringOutage connects a runtime to a platform, stops the
// platform while a task runs, and lets the task finish with answer: the
// runtime owes the platform the report, kept in its ledger's outbox.
func reportOwedDuringOutage(l *lab, answer string) (*platform, *connected, mesh.TaskRun) {
	t := l.t
	t.Helper()
	p := l.startPlatform(platformOptions{lease: outboxLease})
	dir := t.TempDir()
	c := l.connect(p, l.startAdapter("command", slowHost(t, dir, answer)).Endpoint)
	run := c.task("slow job")
	waitStatus(t, p.Platform, run.ID, mesh.StatusRunning, waitStart)
	waitFile(t, filepath.Join(dir, "started"))

	p.stop()
	touch(t, filepath.Join(dir, "go"))
	c.m.waitLedger(c.AgentID, waitStart, func(e ledgerEntry) bool { return e.TaskRunID == run.ID && e.Event == "report_pending" })
	return p, c, run
}

// outboxLease is the lease of the platforms restarted under a runtime that
// owes them a report. A restarted platform counts leases that ran out while
// it was down from one lease after its start; the runtime reconnects with a
// backoff of up to 5s. 10s leaves it the time to renew, as 60s does in use.
const outboxLease = 10 * time.Second

// wantDeliveredOnce checks that the run completed with answer and that its
// report went through the outbox exactly once.
func wantDeliveredOnce(t *testing.T, p *platform, m *machine, agentID string, run mesh.TaskRun, answer string) {
	t.Helper()
	m.waitLedger(agentID, waitLost, func(e ledgerEntry) bool { return e.TaskRunID == run.ID && e.Event == "report_delivered" })
	done := waitEnded(t, p.Platform, run.ID, mesh.StatusCompleted, waitStart)
	if outputOf(t, done)["text"] != answer {
		t.Errorf("output %s, want %q", done.Output, answer)
	}
	counts := map[string]int{}
	for _, e := range m.ledger(agentID) {
		if e.TaskRunID == run.ID {
			counts[e.Event]++
		}
	}
	if counts["report_pending"] != 1 || counts["report_delivered"] != 1 || counts["report_abandoned"] != 0 || counts["task_completed"] != 1 {
		t.Errorf("ledger outbox entries for the run: %v; want one pending, one delivered, none abandoned", counts)
	}
	evs := events(t, p.Platform, url.Values{"agent_id": {agentID}})
	if n := countEvents(evs, mesh.EventTaskRunCompleted, run.ID); n != 1 {
		t.Errorf("the platform announced the run completed %d times, want 1", n)
	}
	if n := countEvents(evs, mesh.EventTaskRunFailed, run.ID); n != 0 {
		t.Errorf("the run was failed %d times on the platform", n)
	}
}

// Seed 001 §4.6: a result the platform cannot take because it is down is
// kept in the ledger's outbox and delivered once the platform is back; the
// run ends completed with that output, reported exactly once.
func TestOutbox_ResultOfTaskFinishedDuringPlatformOutageIsDeliveredAfterRestart(t *testing.T) {
	t.Parallel()
	const answer = "finished while the platform was down"
	p, c, run := reportOwedDuringOutage(newLab(t), answer)
	if st := statusOf(t, c.m); *st.Backlog != 1 || st.Platform != "unreachable" {
		t.Errorf("status during the outage: platform %q, backlog %d; want unreachable, 1", st.Platform, *st.Backlog)
	}

	p.start()
	wantDeliveredOnce(t, p, c.m, c.AgentID, run, answer)
	if st := statusOf(t, c.m); *st.Backlog != 0 || st.Platform != "connected" {
		t.Errorf("status after delivery: platform %q, backlog %d; want connected, 0", st.Platform, *st.Backlog)
	}
}

// A report kept in the outbox survives the runtime: killed with SIGKILL and
// started again, the runtime delivers what the previous process owed.
func TestOutbox_ReportKeptByAKilledRuntimeIsDeliveredByTheNextStart(t *testing.T) {
	t.Parallel()
	const answer = "finished before the crash"
	p, c, run := reportOwedDuringOutage(newLab(t), answer)
	c.rt.kill()
	p.start()
	c.m.startRuntime()
	wantDeliveredOnce(t, p, c.m, c.AgentID, run, answer)
}

// A run whose host wrote files finishes while the platform is down: its
// artifacts wait, like its result, until the platform is back, and the run
// completes with them (README: nothing is lost).
func TestOutbox_ArtifactsOfTaskFinishedDuringPlatformOutageAreStoredAfterRestart(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{lease: outboxLease})
	dir := t.TempDir()
	host := script(t, `
d='`+dir+`'
touch "$d/started"
`+untilFile(filepath.Join(dir, "go"))+`
printf '# Report\n\nall done\n' > "$A2A_OUTPUT_DIR/report.md"
printf 'dot' > "$A2A_OUTPUT_DIR/dot.png"
echo "files written"
touch "$d/done"
`)
	c := l.connect(p, l.startAdapter("command", host).Endpoint)
	run := c.task("write files")
	waitStatus(t, p.Platform, run.ID, mesh.StatusRunning, waitStart)
	waitFile(t, filepath.Join(dir, "started"))

	p.stop()
	touch(t, filepath.Join(dir, "go"))
	waitFile(t, filepath.Join(dir, "done"))
	p.start()

	done := waitEnded(t, p.Platform, run.ID, mesh.StatusCompleted, waitLost)
	parts, _ := outputOf(t, done)["parts"].([]any)
	refs := 0
	for _, part := range parts {
		if m, _ := part.(map[string]any); m["type"] == "artifact_ref" {
			refs++
		}
	}
	if refs != 2 {
		t.Fatalf("completed output refers to %d artifacts, want dot.png and report.md; output %s", refs, done.Output)
	}
}
