package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// tasks create --wait and tasks reply --wait exit by how the run ended,
// after printing it: 0 completed, 3 failed, 4 canceled, 5 waits for input,
// and say why on standard error, so a script tells them apart by the exit
// code alone.
func TestTasksWait_ExitCodeTellsCompletedFailedCanceledAndInputRequiredApart(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	fa := newFakeAdapter(t, func(ctx context.Context, w http.ResponseWriter, task map[string]any) {
		input, _ := task["input"].(map[string]any)
		text, _ := input["text"].(string)
		w.Header().Set("Content-Type", "application/json")
		switch text {
		case "give up":
			_ = json.NewEncoder(w).Encode(map[string]any{"success": false, "error": "the agent gave up"})
		case "ask":
			_ = json.NewEncoder(w).Encode(map[string]any{"success": true, "output": map[string]any{"text": "Which city?", "input_required": true}})
		case "hold":
			<-ctx.Done()
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"success": true, "output": map[string]any{"text": "done: " + text}})
		}
	})
	c := l.connect(p, fa.Endpoint)
	admin := func(args ...string) []string {
		return append(args, "--api-base", p.APIBase, "--owner-token-file", filepath.Join(p.dataDir, "owner.token"), "-o", "json")
	}
	create := func(text string) []string {
		return admin("tasks", "create", "--agent", c.AgentID, "--text", text, "--wait")
	}
	printed := func(t *testing.T, r result, want mesh.Status) mesh.TaskRun {
		t.Helper()
		var run mesh.TaskRun
		if err := json.Unmarshal([]byte(r.stdout), &run); err != nil || run.Status != want {
			t.Fatalf("printed run in status %q (%v), want %s: %s", run.Status, err, want, r)
		}
		return run
	}

	t.Run("completed", func(t *testing.T) {
		r := l.run("tasks create --wait", nil, bins.Platform, create("hello")...)
		if r.code != 0 {
			t.Fatalf("exit %d, want 0: %s", r.code, r)
		}
		printed(t, r, mesh.StatusCompleted)
	})
	t.Run("failed", func(t *testing.T) {
		r := l.run("tasks create --wait", nil, bins.Platform, create("give up")...)
		if r.code != 3 {
			t.Fatalf("exit %d, want 3: %s", r.code, r)
		}
		run := printed(t, r, mesh.StatusFailed)
		if !strings.Contains(r.stderr, run.ID+" failed") || !strings.Contains(r.stderr, "the agent gave up") {
			t.Errorf("standard error does not say the run failed and why: %s", r)
		}
	})
	t.Run("input required, then answered", func(t *testing.T) {
		r := l.run("tasks create --wait", nil, bins.Platform, create("ask")...)
		if r.code != 5 {
			t.Fatalf("exit %d, want 5: %s", r.code, r)
		}
		run := printed(t, r, mesh.StatusInputRequired)
		if !strings.Contains(r.stderr, "tasks reply "+run.ID) {
			t.Errorf("standard error does not say how to answer: %s", r)
		}
		r = l.run("tasks reply --wait", nil, bins.Platform, admin("tasks", "reply", run.ID, "--text", "Paris", "--wait")...)
		if r.code != 0 {
			t.Fatalf("reply: exit %d, want 0: %s", r.code, r)
		}
		printed(t, r, mesh.StatusCompleted)
	})
	t.Run("canceled", func(t *testing.T) {
		waiting := l.start("tasks create --wait", nil, bins.Platform, create("hold")...)
		var runID string
		meshtest.Eventually(t, waitStart, func() bool {
			var list struct {
				TaskRuns []mesh.TaskRun `json:"task_runs"`
			}
			r := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?status=running&agent_id=" + c.AgentID, Owner: true}).
				Expect(t, http.StatusOK)
			if err := json.Unmarshal(r.Body, &list); err != nil {
				t.Fatal(err)
			}
			if len(list.TaskRuns) == 1 {
				runID = list.TaskRuns[0].ID
			}
			return runID != ""
		}, func() string { return "the held run never ran:\n" + waiting.shown(4000) })
		cancelTask(t, p.Platform, runID)
		if code := waiting.waitExit(t, waitStart); code != 4 {
			t.Fatalf("exit %d, want 4; output:\n%s", code, waiting.shown(4000))
		}
		if !strings.Contains(waiting.stderr.String(), runID+" was canceled") {
			t.Errorf("standard error does not say the run was canceled:\n%s", waiting.shown(4000))
		}
	})
}
