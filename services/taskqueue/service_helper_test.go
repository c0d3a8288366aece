package taskqueue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/rs/zerolog"
)

// startService runs a task-queue service against the given NATS URLs, with
// streams and buckets provisioned at the given replication.
func startService(t *testing.T, urls string, replicas int, cfg Config) *Service {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg.Conn = clustertest.ProvisionedBus(t, urls, "taskqueue test", replicas)
	cfg.Logger = zerolog.Nop()
	s := New(cfg)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(time.Second) })
	return s
}

// singleService runs the service on one fresh server.
func singleService(t *testing.T, cfg Config) *Service {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1})
	return startService(t, c.URL(0), 1, cfg)
}

// storeRun writes a run record as it is, bypassing every check. Its
// agent, a new one unless named, is stored too when it is not there: the
// reaper cancels a run whose agent does not exist.
func storeRun(t *testing.T, s *Service, r *mesh.TaskRun) *mesh.TaskRun {
	t.Helper()
	if r.ID == "" {
		r.ID = mesh.NewID()
	}
	if r.TargetAgentID == "" {
		r.TargetAgentID = mesh.NewID()
	}
	if _, _, err := s.agentStore.Get(context.Background(), r.TargetAgentID); errors.Is(err, mesh.ErrNotFound) {
		now := time.Now().UTC()
		if _, err := s.agentStore.Create(context.Background(), r.TargetAgentID, &mesh.Agent{ID: r.TargetAgentID, Name: "stored", CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now().UTC()
		r.UpdatedAt = r.CreatedAt
	}
	if r.Input == nil {
		r.Input = []byte(`{"text":"x"}`)
	}
	rev, err := s.runs.Create(context.Background(), r.ID, r)
	if err != nil {
		t.Fatal(err)
	}
	r.Revision = rev
	return r
}
