package taskqueue_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestMetrics_RunDurationByEndStatusAndQueueTimeOfTheFirstClaim: every run
// that ends is observed once in a2amesh_task_run_duration_seconds under the
// status it ended with, and a2amesh_claim_latency_seconds counts a run's time
// in the queue once, at its first claim: the claim of a retry would measure
// the earlier attempt's work, not waiting.
func TestMetrics_RunDurationByEndStatusAndQueueTimeOfTheFirstClaim(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = testLease; c.HeartbeatTimeout = 30 * time.Second })
	agent := p.CreateAgent("measured")
	rt := p.OnlineRuntime(t, agent.ID)

	done := p.CreateTask(agent.ID, "done")
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	p.Report(t, done.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "ok"}}).Expect(t, http.StatusOK)

	retried := p.CreateTaskWith(t, map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "again"}, "max_attempts": 2}).
		Expect(t, http.StatusCreated).Run(t)
	p.PullRun(t, agent.ID, rt.RuntimeToken)
	p.WaitTask(retried.ID, testLease+3*time.Second, meshtest.StatusIs(mesh.StatusPending))
	if again := p.Pull(t, agent.ID, rt.RuntimeToken, "5s").Expect(t, http.StatusOK).Run(t); again.Attempt != 2 {
		t.Fatalf("second claim is attempt %d", again.Attempt)
	}
	p.Report(t, retried.ID, "fail", rt.RuntimeToken, map[string]any{"attempt": 2, "output": map[string]any{"error": "broken", "code": "E1"}}).
		Expect(t, http.StatusOK)

	canceled := p.CreateTask(agent.ID, "never claimed")
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + canceled.ID + "/cancel", Owner: true}).Expect(t, http.StatusOK)
	// A repeated cancel changes nothing and is not a second end.
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + canceled.ID + "/cancel", Owner: true}).Expect(t, http.StatusConflict)

	want := []string{
		`a2amesh_task_run_duration_seconds_count{status="completed"} 1`,
		`a2amesh_task_run_duration_seconds_count{status="failed"} 1`,
		`a2amesh_task_run_duration_seconds_count{status="canceled"} 1`,
		`a2amesh_claim_latency_seconds_count 2`,
	}
	var body string
	meshtest.Eventually(t, 5*time.Second, func() bool {
		body = string(p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/metrics"}).Expect(t, http.StatusOK).Body)
		for _, w := range want {
			if !strings.Contains(body, w+"\n") {
				return false
			}
		}
		return true
	}, func() string {
		var got []string
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "a2amesh_task_run_duration_seconds_count") || strings.HasPrefix(line, "a2amesh_claim_latency_seconds_count") {
				got = append(got, line)
			}
		}
		return "metrics lack one of " + strings.Join(want, "; ") + "; have:\n" + strings.Join(got, "\n")
	})
	if strings.Contains(body, `a2amesh_task_run_duration_seconds_count{status="pending"}`) ||
		strings.Contains(body, `a2amesh_task_run_duration_seconds_count{status="running"}`) {
		t.Fatalf("a run that has not ended has a duration:\n%s", body)
	}
}
