package partner

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
	"github.com/a2amesh/a2amesh/services/internal/homes"
)

// taskRecord is what the partner endpoint keeps about a task beyond its run
// (the run's input holds the params as input.data): the method it was
// called with and what the caller said about itself and its session.
type taskRecord struct {
	Method        string    `json:"method"`
	ClientAgentID string    `json:"client_agent_id,omitempty"`
	SessionID     string    `json:"session_id,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
}

// Keys of BucketA2AEndpoints used by this endpoint. Session ids are the caller's
// to choose, so they are hashed (with the caller) into the key alphabet.
func taskKey(runID string) string { return "ptask." + runID }
func sessionKey(callerID, sessionID string) string {
	return "psession." + secret.Hash(callerID + "\x00" + sessionID)[:48]
}

// records reads and writes the partner endpoint's keys of
// BucketA2AEndpoints: a task's in the region that keeps its run, a
// session's where the caller's first agent is homed.
type records struct {
	tasks    *bus.RegionRecords[taskRecord]
	sessions *admission.Conversations
	homes    *homes.Directory
}

func openRecords(ctx context.Context, js jetstream.JetStream, client *meshapi.Client, homes *homes.Directory) (*records, error) {
	sessions, err := admission.OpenConversations(ctx, js, client, homes)
	if err != nil {
		return nil, err
	}
	return &records{tasks: bus.NewRegionRecords[taskRecord](js, bus.BucketA2AEndpoints), sessions: sessions, homes: homes}, nil
}

// of returns the bucket of the region that keeps a run.
func (r *records) of(ctx context.Context, run *mesh.TaskRun) (*bus.Records[taskRecord], error) {
	if r.homes == nil {
		return r.tasks.In(ctx, "")
	}
	region := run.Region
	if region == "" {
		// Stored before runs named their region: its agent's home.
		var err error
		if region, err = r.homes.Of(ctx, run.TargetAgentID); err != nil {
			return nil, err
		}
	}
	return r.tasks.In(ctx, region)
}

// task returns a task's record, or nil when the task was created through
// another endpoint.
func (r *records) task(ctx context.Context, run *mesh.TaskRun) (*taskRecord, error) {
	tasks, err := r.of(ctx, run)
	if err != nil {
		return nil, err
	}
	rec, _, err := tasks.Get(ctx, taskKey(run.ID))
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, nil
	}
	return rec, err
}

// putTask stores a task's record.
func (r *records) putTask(ctx context.Context, run *mesh.TaskRun, rec *taskRecord) error {
	tasks, err := r.of(ctx, run)
	if err != nil {
		return err
	}
	_, err = tasks.Put(ctx, taskKey(run.ID), rec)
	return err
}

// conversation returns the conversation of a caller's session with an
// agent, starting one the first time the session is named.
func (r *records) conversation(ctx context.Context, agentID, callerID, sessionID string) (string, error) {
	return r.sessions.Get(ctx, agentID, sessionKey(callerID, sessionID))
}
