package taskqueue

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestCreate_NodeLossIsARetryNotAnError: while the node leading the runs
// bucket is lost and its streams elect new leaders, every creation is either
// stored (and readable afterwards) or refused as UNAVAILABLE, which the endpoints
// answer with 503 and Retry-After; none fails as an internal error.
func TestCreate_NodeLossIsARetryNotAnError(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 3})
	nc, js := c.Connect(0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := bus.Provision(ctx, js, bus.ProvisionConfig{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	lost := c.StreamLeader("KV_" + bus.BucketRuns)
	var urls []string
	for i := range 3 {
		if i != lost {
			urls = append(urls, c.URL(i))
		}
	}
	s := startService(t, strings.Join(urls, ","), 3, Config{})
	agent := &mesh.Agent{ID: mesh.NewID(), Name: "steady"}
	if _, err := s.agentStore.Create(ctx, agent.ID, agent); err != nil {
		t.Fatal(err)
	}
	create := func() (*meshapi.CreateTaskRunResponse, error) {
		cctx, ccancel := context.WithTimeout(ctx, bus.DefaultCallTimeout)
		defer ccancel()
		return s.create(cctx, &meshapi.CreateTaskRunRequest{TargetAgentID: agent.ID, Input: []byte(`{"text":"hi"}`)})
	}
	if _, err := create(); err != nil {
		t.Fatalf("before the loss: %v", err)
	}

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		c.Stop(lost)
	}()
	var stored []string
	unavailable := 0
	until := time.Now().Add(8 * time.Second)
	for time.Now().Before(until) {
		res, err := create()
		switch {
		case err == nil:
			stored = append(stored, res.TaskRun.ID)
		case errors.Is(err, mesh.ErrUnavailable):
			unavailable++
		default:
			t.Fatalf("creation during the node loss failed with %v (code %s), want stored or UNAVAILABLE", err, mesh.AsError(err).Code)
		}
	}
	<-stopped
	if len(stored) == 0 {
		t.Fatalf("nothing was stored in 8 s after the node loss (%d unavailable)", unavailable)
	}
	for _, id := range stored {
		run, err := s.getRun(ctx, id)
		if err != nil || run.Status != mesh.StatusPending {
			t.Fatalf("created run %s: %v %+v", id, err, run)
		}
	}
	t.Logf("%d stored, %d unavailable", len(stored), unavailable)
}

// TestCreate_RetryAfterUnavailableWithTheSameKeyIsServedAtOnce: a creation
// answered UNAVAILABLE leaves its idempotency key free, so the client's retry
// with the same key creates the run at once instead of waiting for the key
// to go stale.
func TestCreate_RetryAfterUnavailableWithTheSameKeyIsServedAtOnce(t *testing.T) {
	s := singleService(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	agent := &mesh.Agent{ID: mesh.NewID(), Name: "retried"}
	if _, err := s.agentStore.Create(ctx, agent.ID, agent); err != nil {
		t.Fatal(err)
	}
	req := func() *meshapi.CreateTaskRunRequest {
		return &meshapi.CreateTaskRunRequest{TargetAgentID: agent.ID, Input: []byte(`{"text":"once"}`), IdempotencyKey: "k-1"}
	}
	// The runs bucket does not answer.
	if err := s.js.DeleteStream(ctx, "KV_"+bus.BucketRuns); err != nil {
		t.Fatal(err)
	}
	if _, err := s.create(ctx, req()); !errors.Is(err, mesh.ErrUnavailable) {
		t.Fatalf("create with the runs bucket gone: %v, want UNAVAILABLE", err)
	}
	if err := bus.Provision(ctx, s.js, bus.ProvisionConfig{}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	res, err := s.create(ctx, req())
	if err != nil || !res.Created {
		t.Fatalf("retry with the same key: %v %+v", err, res)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Fatalf("retry with the same key took %s", took)
	}
}

// TestRenew_ARunWhoseLeaseTheStoreCannotExtendIsNotNamedLost: while the
// runs' store cannot be written (the task queue's node cut off from the
// rest of the cluster), a renewal of a run its runtime holds answers
// UNAVAILABLE, which the runtime tries again within a second, and does
// not name the run lost. A run named lost is stopped by its runtime and,
// since nobody renews it any more, failed as RUNTIME_LOST when its lease
// runs out, although its runtime was working on it.
func TestRenew_ARunWhoseLeaseTheStoreCannotExtendIsNotNamedLost(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 3})
	nc, js := c.Connect(0)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := bus.Provision(ctx, js, bus.ProvisionConfig{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	s := startService(t, c.URL(0), 3, Config{})
	runtimeID := mesh.NewID()
	lease := time.Now().UTC().Add(time.Minute)
	run := storeRun(t, s, &mesh.TaskRun{Status: mesh.StatusRunning, RuntimeID: runtimeID, Attempt: 1, MaxAttempts: 1, LeaseExpiresAt: &lease})
	runtimes, err := bus.OpenRecords[mesh.Runtime](ctx, s.js, bus.BucketRuntimes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtimes.Create(ctx, runtimeID, &mesh.Runtime{ID: runtimeID, AgentID: run.TargetAgentID, State: mesh.RuntimeActive}); err != nil {
		t.Fatal(err)
	}
	if err := s.runtimes.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	rc := s.client.Runtime(run.TargetAgentID, runtimeID)
	renew := func() (*meshapi.RenewResponse, error) {
		// As long as the runtime waits for a renewal.
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return rc.Renew(rctx, meshapi.RenewRequest{TaskRunIDs: []string{run.ID}})
	}
	if res, err := renew(); err != nil || !slices.Equal(res.Renewed, []string{run.ID}) {
		t.Fatalf("renewal before the cut: %v %+v", err, res)
	}

	for other := 1; other < 3; other++ {
		c.Cut(0, other)
	}
	res, err := renew()
	switch {
	case err == nil && slices.Contains(res.Lost, run.ID):
		t.Fatalf("renewal while the store cannot be written named the run lost: %+v", res)
	case err == nil:
		t.Fatalf("renewal while the store cannot be written answered %+v, want UNAVAILABLE", res)
	case !errors.Is(err, mesh.ErrUnavailable):
		t.Fatalf("renewal while the store cannot be written: %v, want UNAVAILABLE", err)
	}

	for other := 1; other < 3; other++ {
		c.Heal(0, other)
	}
	for {
		res, err := renew()
		if err == nil && slices.Equal(res.Renewed, []string{run.ID}) {
			break
		}
		if err == nil || ctx.Err() != nil {
			t.Fatalf("renewal once the cluster is whole again: %v %+v", err, res)
		}
	}
}
