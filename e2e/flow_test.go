package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// Seed 001 §9 "Heartbeat": once started, the runtime is online on the
// platform, shown with its device and host type, and records its last
// heartbeat in its profile; stopped, it goes offline.
func TestHeartbeat_StartedRuntimeIsOnlineAndRecordsLastHeartbeat(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	ad := l.startAdapter("echo")
	agent := p.CreateAgent("heartbeat")
	m := l.newMachine()
	pr := m.pair(p.Platform, agent.ID, ad.Endpoint, "--local-executor-type", "hermes", "--device-name", "studio-mac")
	started := time.Now().Add(-time.Second)
	rt := m.startRuntime()

	v := waitOnline(t, p.Platform, agent.ID, pr.RuntimeID)
	if v.DeviceName != "studio-mac" || v.HostType != "hermes" || v.State != mesh.RuntimeActive {
		t.Errorf("runtime view: device %q host %q state %s, want studio-mac hermes active", v.DeviceName, v.HostType, v.State)
	}
	if v.LastHeartbeatAt == nil || v.LastHeartbeatAt.Before(started) {
		t.Errorf("platform last_heartbeat_at %v is not after the start (%v)", v.LastHeartbeatAt, started)
	}
	var recorded time.Time
	meshtest.Eventually(t, waitStart, func() bool {
		recorded = m.profileFile().Profiles[pr.Name()].LastHeartbeatAt
		return recorded.After(started)
	}, func() string {
		return "last_heartbeat_at never recorded in the profile: " + meshtest.ReadFile(m.profilePath())
	})
	// Heartbeats keep coming: the recorded time moves on.
	meshtest.Eventually(t, waitStart, func() bool {
		return m.profileFile().Profiles[pr.Name()].LastHeartbeatAt.After(recorded)
	}, func() string { return "last_heartbeat_at stopped moving at " + recorded.String() })
	if info, err := os.Stat(m.profilePath()); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("recording heartbeats changed the profile file mode: %v %v", info.Mode(), err)
	}
	if m.profileFile().ActiveProfile != pr.Name() {
		t.Errorf("recording heartbeats changed active_profile")
	}

	rt.kill()
	waitPresence(t, p.Platform, agent.ID, pr.RuntimeID, mesh.PresenceOffline, waitLost)
}

// Seed 001 §9 "Pull", "Execute", "Complete": a task run goes pending →
// running → completed with the host's output; the adapter receives exactly
// the seed 000 body, which never carries the runtime token or the API base.
func TestRun_GoesPendingRunningCompletedWithTheSeed000Body(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	dir := t.TempDir()
	host := script(t, `
d='`+dir+`'
printf '%s' "$A2A_TASK_JSON" > "$d/task.json"
env > "$d/env.txt"
text=$(cat)
`+untilFile(filepath.Join(dir, "go"))+`
printf 'handled: %s' "$text"
`)
	ad := l.startAdapter("command", host)
	initiator := p.CreateAgent("initiator")
	agent := p.CreateAgent("worker")
	m := l.newMachine()
	pr := m.pair(p.Platform, agent.ID, ad.Endpoint)

	// No runtime yet: the run waits, pending.
	run := createTask(t, p.Platform, map[string]any{
		"target_agent_id": agent.ID, "initiator_agent_id": initiator.ID, "task_type": "analysis",
		"input": map[string]any{"text": "summarise the report", "lang": "en", "files": []string{"a.md"}},
	})
	if got := p.GetTask(run.ID); got.Status != mesh.StatusPending {
		t.Fatalf("without a runtime the run is %s, want pending", got.Status)
	}

	m.startRuntime()
	running := waitStatus(t, p.Platform, run.ID, mesh.StatusRunning, waitStart)
	if running.RuntimeID != pr.RuntimeID || running.Attempt != 1 {
		t.Errorf("running run: runtime %s attempt %d, want %s attempt 1", running.RuntimeID, running.Attempt, pr.RuntimeID)
	}
	var body []byte
	meshtest.Eventually(t, waitStart, func() bool {
		body, _ = os.ReadFile(filepath.Join(dir, "task.json"))
		return json.Valid(body) && len(body) > 0
	}, func() string { return "the host never received the task" })

	var got map[string]json.RawMessage
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{"conversation_id", "initiator_agent_id", "input", "platform", "target_agent_id", "task_run_id", "task_type", "workspace_id"}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("run-task body has fields %v, want exactly %v", keys, wantKeys)
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(got[k], &s)
		return s
	}
	for k, want := range map[string]string{
		"task_run_id": run.ID, "conversation_id": run.ConversationID, "workspace_id": run.WorkspaceID,
		"task_type": "analysis", "initiator_agent_id": initiator.ID, "target_agent_id": agent.ID,
	} {
		if str(k) != want || want == "" {
			t.Errorf("run-task %s = %q, want %q", k, str(k), want)
		}
	}
	var input, snapshot any
	_ = json.Unmarshal(got["input"], &input)
	_ = json.Unmarshal(run.Input, &snapshot)
	if meshtest.JSON(input) != meshtest.JSON(snapshot) {
		t.Errorf("run-task input %s, want the run's input %s", got["input"], run.Input)
	}
	var plat map[string]string
	if err := json.Unmarshal(got["platform"], &plat); err != nil || plat["name"] == "" || plat["origin"] == "" || len(plat) != 2 {
		t.Errorf("run-task platform = %s, want {name, origin}", got["platform"])
	}
	if strings.Contains(plat["origin"], "://") {
		t.Errorf("platform.origin %q is a URL, want a domain", plat["origin"])
	}
	for name, secret := range map[string]string{"runtime token": pr.Token, "API base": p.APIBase} {
		if strings.Contains(string(body), secret) {
			t.Errorf("the run-task body carries the %s: %s", name, body)
		}
		if strings.Contains(meshtest.ReadFile(filepath.Join(dir, "env.txt")), secret) {
			t.Errorf("the host's environment carries the %s", name)
		}
	}
	for _, field := range []string{"runtime_token", "api_base"} {
		if _, ok := got[field]; ok {
			t.Errorf("the run-task body has a %s field", field)
		}
	}

	touch(t, filepath.Join(dir, "go"))
	done := waitEnded(t, p.Platform, run.ID, mesh.StatusCompleted, waitStart)
	if text := outputOf(t, done)["text"]; text != "handled: summarise the report" {
		t.Errorf("output.text = %q, want the host's stdout", text)
	}
	if done.Error != nil || done.EndedAt == nil {
		t.Errorf("completed run: error %+v, ended_at %v", done.Error, done.EndedAt)
	}
}

// Seed 001 §9 "Fail": a host that exits non-zero fails the run, quoting the
// end of its stderr.
func TestFail_HostExitingNonZeroFailsRunWithStderrTail(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	host := script(t, `
echo "reading config" >&2
echo "fatal: model quota exhausted for today" >&2
exit 3
`)
	c := l.connect(p, l.startAdapter("command", host).Endpoint)
	run := waitEnded(t, p.Platform, c.task("do it").ID, mesh.StatusFailed, waitStart)
	wantError(t, run, "ADAPTER_REPORTED_FAILURE", "fatal: model quota exhausted for today")
	if errText, _ := outputOf(t, run)["error"].(string); !strings.Contains(errText, "fatal: model quota exhausted") {
		t.Errorf("output.error = %q, want the stderr tail", errText)
	}
}

// Seed 000 "Failed Response": {"success": false, "error": "..."} fails the
// run with that reason in output.error.
func TestFail_ExplicitAdapterFailureFailsRunWithItsReason(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	fa := newFakeAdapter(t, func(_ context.Context, w http.ResponseWriter, _ map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"success":false,"error":"the agent refused: out of scope"}`)
	})
	c := l.connect(p, fa.Endpoint)
	run := waitEnded(t, p.Platform, c.task("book a flight").ID, mesh.StatusFailed, waitStart)
	wantError(t, run, "ADAPTER_REPORTED_FAILURE", "the agent refused: out of scope")
	if got := outputOf(t, run)["error"]; got != "the agent refused: out of scope" {
		t.Errorf("output.error = %v, want the adapter's reason", got)
	}
}

// Seed 001 §9 "Health": the adapter answers GET /health with {"ok": true},
// and status reports the adapter healthy and the platform connected without
// ever printing the token.
func TestHealth_AdapterHealthyAndStatusReportsConnection(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	ad := l.startAdapter("echo")
	resp, err := http.Get(ad.Base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var health map[string]any
	err = json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || health["ok"] != true {
		t.Fatalf("GET /health: HTTP %d %v %v, want 200 {\"ok\": true}", resp.StatusCode, health, err)
	}
	if health["provider"] != "echo" {
		t.Errorf("health provider = %v, want echo", health["provider"])
	}

	c := l.connect(p, ad.Endpoint)
	res := c.m.cli("status", "--json")
	if res.code != 0 {
		t.Fatalf("status --json: %s", res)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil {
		t.Fatalf("status --json is not JSON: %v\n%s", err, res.stdout)
	}
	if st["adapter"] != "healthy" || st["platform_connection"] != "connected" {
		t.Errorf("status: adapter %v, platform %v; want healthy, connected\n%s", st["adapter"], st["platform_connection"], res.stdout)
	}
	if prof, _ := st["profile"].(map[string]any); prof["profile_name"] != c.Name() || prof["has_runtime_token"] != true {
		t.Errorf("status profile = %v, want %s with a token", prof, c.Name())
	}
	text := c.m.cli("status")
	if text.code != 0 || !strings.Contains(text.stdout, "healthy") || !strings.Contains(text.stdout, "connected") {
		t.Errorf("status: %s", text)
	}
	meshtest.AssertNoSecrets(t, []string{c.Token}, map[string]string{
		"status --json output": res.stdout + res.stderr,
		"status output":        text.stdout + text.stderr,
	})

	// With the adapter gone, status says so.
	ad.kill()
	down := c.m.cli("status", "--json")
	if !strings.Contains(down.stdout, `"adapter": "unreachable"`) {
		t.Errorf("status with the adapter stopped:\n%s", down.stdout)
	}
}

// Seed 001 §9 "Ledger": the execution ledger has runtime_started →
// task_pulled → task_started → task_completed (or task_failed), in order,
// with ids and times, and no secret.
func TestLedger_RecordsTheChainOfEveryRunInOrder(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	host := script(t, `
text=$(cat)
if [ "$text" = "fail" ]; then echo "cannot do that" >&2; exit 1; fi
echo "ok: $text"
`)
	c := l.connect(p, l.startAdapter("command", host).Endpoint)
	ok := waitEnded(t, p.Platform, c.task("work").ID, mesh.StatusCompleted, waitStart)
	bad := waitEnded(t, p.Platform, c.task("fail").ID, mesh.StatusFailed, waitStart)
	c.m.waitLedger(c.AgentID, waitStart, func(e ledgerEntry) bool { return e.TaskRunID == bad.ID && e.Event == "task_failed" })

	entries := c.m.ledger(c.AgentID)
	if len(entries) == 0 || entries[0].Event != "runtime_started" {
		t.Fatalf("the ledger does not start with runtime_started: %+v", entries)
	}
	for _, tc := range []struct {
		run  mesh.TaskRun
		want []string
	}{
		{ok, []string{"task_pulled", "task_started", "task_completed"}},
		{bad, []string{"task_pulled", "task_started", "task_failed"}},
	} {
		if got := ledgerEvents(entries, tc.run.ID); !slices.Equal(got, tc.want) {
			t.Errorf("ledger events of run %s: %v, want %v", tc.run.ID, got, tc.want)
		}
	}
	var prev time.Time
	for i, e := range entries {
		if e.TS.IsZero() || e.TS.Before(prev) {
			t.Errorf("ledger entry %d (%s) has time %v after %v", i, e.Event, e.TS, prev)
		}
		prev = e.TS
		if e.AgentID != c.AgentID || e.RuntimeID != c.RuntimeID {
			t.Errorf("ledger entry %d (%s) names agent %q runtime %q", i, e.Event, e.AgentID, e.RuntimeID)
		}
		if e.Event == "task_failed" && e.ErrorCode == "" {
			t.Errorf("task_failed entry without an error code: %+v", e)
		}
	}
	info, err := os.Stat(c.m.ledgerPath(c.AgentID))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("ledger file mode: %v %v, want 0600", info.Mode(), err)
	}
	meshtest.AssertNoSecrets(t, []string{c.Token, c.Code, p.OwnerToken}, map[string]string{"ledger": meshtest.ReadFile(c.m.ledgerPath(c.AgentID))})
}
