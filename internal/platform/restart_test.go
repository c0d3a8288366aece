package platform_test

import (
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// restartLease is long enough that checks made right after a restart happen
// well inside the grace the reaper gives leases, short enough to wait out.
const restartLease = 3 * time.Second

// world is what a test builds before a restart and checks after it.
type world struct {
	ownerToken string
	agents     []string
	runtimes   map[string][]mesh.RuntimeView // by agent
	runs       map[string]mesh.TaskRun       // by id
	holder     meshtest.Attached             // holds the running runs
	worker     meshtest.Attached             // has pending runs waiting
	running    []string
	pending    []string
}

// build creates two agents with runtimes (one replaced), runs in every
// status, and records it all.
func build(t *testing.T, p *meshtest.Platform) *world {
	w := &world{ownerToken: p.OwnerToken, runtimes: map[string][]mesh.RuntimeView{}, runs: map[string]mesh.TaskRun{}}
	busy, idle := p.CreateAgent("busy"), p.CreateAgent("idle")
	w.agents = []string{busy.ID, idle.ID}
	replaced := p.OnlineRuntime(t, busy.ID) // replaced by the next pairing
	w.holder = p.OnlineRuntime(t, busy.ID)
	w.worker = p.OnlineRuntime(t, idle.ID)
	p.WaitRuntimeView(t, busy.ID, replaced.RuntimeID, func(v mesh.RuntimeView) bool { return v.State == mesh.RuntimeReplaced })
	p.WaitRuntimeView(t, busy.ID, w.holder.RuntimeID, meshtest.Listed)
	p.WaitRuntimeView(t, idle.ID, w.worker.RuntimeID, meshtest.Listed)

	done := p.CreateTask(busy.ID, "done")
	p.PullRun(t, busy.ID, w.holder.RuntimeToken)
	p.Report(t, done.ID, "complete", w.holder.RuntimeToken, map[string]any{"output": map[string]any{"text": "kept"}}).Expect(t, http.StatusOK)
	failed := p.CreateTask(busy.ID, "failed")
	p.PullRun(t, busy.ID, w.holder.RuntimeToken)
	p.Report(t, failed.ID, "fail", w.holder.RuntimeToken, map[string]any{"output": map[string]any{"error": "kept too", "code": "KEPT"}}).Expect(t, http.StatusOK)
	canceled := p.CreateTask(idle.ID, "canceled")
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + canceled.ID + "/cancel", Owner: true}).Expect(t, http.StatusOK)
	for range 2 {
		run := p.CreateTask(busy.ID, "running")
		p.PullRun(t, busy.ID, w.holder.RuntimeToken)
		p.Report(t, run.ID, "progress", w.holder.RuntimeToken, map[string]any{"message": "half", "percent": 50}).Expect(t, http.StatusOK)
		w.running = append(w.running, run.ID)
	}
	for range 3 {
		w.pending = append(w.pending, p.CreateTask(idle.ID, "pending").ID)
	}
	w.snapshot(t, p)
	if len(w.runs) != 8 {
		t.Fatalf("built %d runs, want 8", len(w.runs))
	}
	return w
}

func (w *world) snapshot(t *testing.T, p *meshtest.Platform) {
	var list struct {
		TaskRuns []mesh.TaskRun `json:"task_runs"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?limit=500", Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
	for _, r := range list.TaskRuns {
		w.runs[r.ID] = r
	}
	for _, a := range w.agents {
		w.runtimes[a] = p.RuntimeViews(t, a)
	}
}

// checkSurvived compares the restarted platform with the world as built. A
// running run may already have been reaped if this check was slow, but only
// as the lease rule says.
func (w *world) checkSurvived(t *testing.T, p *meshtest.Platform, restartedAt time.Time, lease time.Duration) {
	t.Helper()
	if p.OwnerToken != w.ownerToken {
		t.Fatal("the owner credential changed across the restart")
	}
	var agents struct {
		Agents []mesh.Agent `json:"agents"`
	}
	p.Do(http.MethodGet, "/agent-accounts", nil, &agents)
	var ids []string
	for _, a := range agents.Agents {
		ids = append(ids, a.ID)
	}
	want := append([]string(nil), w.agents...)
	sort.Strings(ids)
	sort.Strings(want)
	if meshtest.JSON(ids) != meshtest.JSON(want) {
		t.Fatalf("agents after restart: %v, want %v", ids, want)
	}
	for agent, before := range w.runtimes {
		after := p.RuntimeViews(t, agent)
		if len(after) != len(before) {
			t.Fatalf("agent %s has %d runtimes after restart, %d before", agent, len(after), len(before))
		}
		for i := range before {
			if after[i].RuntimeID != before[i].RuntimeID || after[i].State != before[i].State || after[i].DeviceName != before[i].DeviceName {
				t.Fatalf("runtime %d of %s: %+v, before %+v", i, agent, after[i], before[i])
			}
		}
	}
	var list struct {
		TaskRuns []mesh.TaskRun `json:"task_runs"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?limit=500", Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.TaskRuns) != len(w.runs) {
		t.Fatalf("%d runs after restart, %d before", len(list.TaskRuns), len(w.runs))
	}
	for _, r := range list.TaskRuns {
		b, ok := w.runs[r.ID]
		if !ok {
			t.Fatalf("run %s appeared across the restart", r.ID)
		}
		if b.Status == mesh.StatusRunning && r.Status == mesh.StatusFailed && r.Error.Code == mesh.ReasonRuntimeLost && !r.EndedAt.Before(restartedAt.Add(lease)) {
			continue
		}
		if r.Status != b.Status || r.Attempt != b.Attempt || r.RuntimeID != b.RuntimeID || string(r.Output) != string(b.Output) ||
			meshtest.JSON(r.Error) != meshtest.JSON(b.Error) || meshtest.JSON(r.Progress) != meshtest.JSON(b.Progress) {
			t.Fatalf("run %s after restart: %+v\nbefore: %+v", r.ID, r, b)
		}
	}
}

// checkRecovers: running runs whose runtime is gone end RUNTIME_LOST one
// lease after the restart; pending runs are handed out, each once; and the
// runtimes' credentials still work.
func (w *world) checkRecovers(t *testing.T, p *meshtest.Platform, restartedAt time.Time, lease time.Duration) {
	t.Helper()
	agent := w.agents[1]
	p.Heartbeat(t, w.worker.RuntimeToken)
	pulled := map[string]bool{}
	for range w.pending {
		r := p.Pull(t, agent, w.worker.RuntimeToken, "5s").Expect(t, http.StatusOK).Run(t)
		if pulled[r.ID] || r.Attempt != 1 {
			t.Fatalf("pulled %s (attempt %d) again after the restart", r.ID, r.Attempt)
		}
		pulled[r.ID] = true
	}
	for _, id := range w.pending {
		if !pulled[id] {
			t.Fatalf("pending run %s was not handed out after the restart", id)
		}
	}
	p.Pull(t, agent, w.worker.RuntimeToken, "").Expect(t, http.StatusNoContent)

	for _, id := range w.running {
		r := p.WaitTask(id, lease+5*time.Second, meshtest.StatusIs(mesh.StatusFailed, mesh.StatusCompleted, mesh.StatusCanceled))
		if r.Error == nil || r.Error.Code != mesh.ReasonRuntimeLost {
			t.Fatalf("run %s that was running at the restart: %s %+v, want failed RUNTIME_LOST", id, r.Status, r.Error)
		}
		if r.EndedAt.Before(restartedAt.Add(lease)) {
			t.Fatalf("run %s was reaped at %v, less than a lease after the restart at %v", id, r.EndedAt, restartedAt)
		}
	}
	// The runtime that held them is still paired.
	p.Heartbeat(t, w.holder.RuntimeToken)
}

// TestRestart_StateSurvivesAGracefulStop stops the platform and starts it
// again on the same data dir.
func TestRestart_StateSurvivesAGracefulStop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := func(c *platform.Config) { c.DataDir = dir; c.Lease = restartLease; c.HeartbeatTimeout = time.Minute }
	p := meshtest.StartPlatform(t, opts)
	w := build(t, p)
	p.Stop()

	restartedAt := time.Now()
	p2 := meshtest.StartPlatform(t, opts)
	w.checkSurvived(t, p2, restartedAt, restartLease)
	// The old API base is gone; the new one answers with the old credential.
	p2.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts", Owner: true}).Expect(t, http.StatusOK)
	w.checkRecovers(t, p2, restartedAt, restartLease)
}

// TestRestart_StateSurvivesKillNine runs the platform as a real process,
// kills it with SIGKILL (no shutdown code runs), and starts it again.
func TestRestart_StateSurvivesKillNine(t *testing.T) {
	t.Parallel()
	bin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-platform")
	dir := t.TempDir()
	opts := meshtest.ProcessOptions{DataDir: dir, Args: []string{"--lease", "2s", "--heartbeat-timeout", "3s"}}
	first := meshtest.StartProcess(t, bin, opts)
	w := build(t, first.Platform)
	first.Kill(t)
	state, err := first.Exited()
	if err != nil {
		t.Fatal(err)
	}
	if ws, ok := state.Sys().(interface{ Signaled() bool }); !ok || !ws.Signaled() {
		t.Fatalf("the platform exited on its own (%v) instead of being killed", state)
	}

	restartedAt := time.Now()
	second := meshtest.StartProcess(t, bin, opts)
	w.checkSurvived(t, second.Platform, restartedAt, 2*time.Second)
	w.checkRecovers(t, second.Platform, restartedAt, 2*time.Second)
}
