package edge

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRegionOutage: three regions, each with every service. A west
// agent's runs are kept in west: created there, they are stored, queued,
// claimed and reported there; created in east, they are handed to west's
// task queue and complete. With east (the region holding the global
// records) down, west goes on creating and completing its agents' runs,
// and a run of an east agent asked for in west fails with 503 rather than
// hanging. When east is back, every run is completed, once.
func TestRegionOutage(t *testing.T) {
	d := startRegions(t, "east", "west", "south")
	endpoint := d.startAdapter()
	west := d.regions["west"].p

	agent := d.createAgent("west", "works in west", "west")
	eastAgent := d.createAgent("east", "works in east", "east")
	m := d.pair(agent, "west", endpoint)
	rt := m.start("--transport", "nats")
	m.waitConnected(rt, "nats", "west")
	m.completes("west", "created at home")
	m.completes("east", "created in east, for west")
	// A list of every run, asked in east, holds the runs west keeps.
	var listed meshapi.TaskRunList
	d.regions["east"].p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?limit=10", Owner: true}).
		Expect(t, http.StatusOK).Decode(t, &listed)
	if len(listed.TaskRuns) != 2 || listed.TaskRuns[0].TargetAgentID != agent.ID || listed.TaskRuns[0].ID < listed.TaskRuns[1].ID {
		t.Fatalf("every run, listed in east: %+v; want west's two runs, newest first", listed.TaskRuns)
	}

	var runs []string
	var mu sync.Mutex
	create := func(n int, label string) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run := west.CreateTask(agent.ID, fmt.Sprintf("%s %d", label, i))
				mu.Lock()
				runs = append(runs, run.ID)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}

	d.sc.Stop("east")
	began := time.Now()
	res := west.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs", Owner: true,
		JSON: map[string]any{"target_agent_id": eastAgent.ID, "input": map[string]any{"text": "for east, while east is down"}}})
	res.ExpectError(t, http.StatusServiceUnavailable, mesh.CodeUnavailable)
	t.Logf("a task for an east agent, created in west with east down, was refused in %s: %s", time.Since(began), res.Body)

	create(200, "while east is down")
	for _, id := range runs {
		got := west.WaitTask(id, 120*time.Second, meshtest.StatusIs(mesh.StatusCompleted, mesh.StatusFailed))
		if got.Status != mesh.StatusCompleted {
			t.Fatalf("run %s ended %s with east down: %+v", id, got.Status, got.Error)
		}
	}

	d.sc.Start("east")
	d.sc.WaitJetStream()
	m.completes("east", "created in east once it is back")
	for _, id := range runs {
		got := d.regions["east"].p.WaitTask(id, 60*time.Second, meshtest.StatusIs(mesh.StatusCompleted, mesh.StatusFailed))
		if got.Status != mesh.StatusCompleted || got.Attempt != 1 {
			t.Fatalf("run %s after east came back: %s, attempt %d", id, got.Status, got.Attempt)
		}
	}
	// The event log every reader follows, kept in east, catches up on
	// west's events: each run's completion, once.
	_, js := d.sc.Connect("east", 0)
	var completed map[string]int
	meshtest.Eventually(t, 60*time.Second, func() bool {
		completed = completions(t, js, agent.ID)
		for _, id := range runs {
			if completed[id] != 1 {
				return false
			}
		}
		return true
	}, func() string {
		return fmt.Sprintf("the event log does not hold one completion of each of the %d runs made with east down: %d runs have one", len(runs), len(completed))
	})
}

// completions counts the task_run.completed events of each run of agent in
// the event log.
func completions(t *testing.T, js jetstream.JetStream, agentID string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, bus.EventStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{bus.EventFilter(agentID, string(mesh.KindTaskRun), "")},
	})
	if err != nil {
		t.Fatalf("event log: %v", err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatalf("event log: %v", err)
	}
	out := map[string]int{}
	for left := info.NumPending; left > 0; left-- {
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("event log: %v", err)
		}
		if msg.Headers().Get("ce-type") == mesh.EventTaskRunCompleted {
			_, _, id, _ := bus.ParseEventSubject(msg.Subject())
			out[id]++
		}
	}
	return out
}
