package runtimeengine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestAdapterConnections_KeptToTheShippedAdapter: the runtime a2a-runtime
// builds learns from the shipped adapter's /health, before its first task,
// that connections may be kept, and sends its tasks over them rather than
// opening one per task.
func TestAdapterConnections_KeptToTheShippedAdapter(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	online := meshtest.StartOnlineAgent(t, p, meshtest.AgentOptions{Name: "kept"})
	const tasks = 10
	for i := range tasks {
		run := p.CreateTask(online.Agent.ID, fmt.Sprintf("task %d", i))
		done := p.WaitTask(run.ID, 20*time.Second, func(r mesh.TaskRun) bool { return r.Status.Terminal() })
		if done.Status != mesh.StatusCompleted {
			t.Fatalf("task %d ended %s", i, done.Status)
		}
	}
	// Health checks open a connection each; the tasks share one.
	if n := online.AdapterTaskConnections(); n != 1 {
		t.Fatalf("the adapter accepted %d connections for %d tasks run one after another, want 1", n, tasks)
	}
}
