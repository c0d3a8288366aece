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

type records struct {
	tasks    *bus.Records[taskRecord]
	sessions *admission.Conversations
}

func openRecords(ctx context.Context, js jetstream.JetStream, client *meshapi.Client) (*records, error) {
	tasks, err := bus.OpenRecords[taskRecord](ctx, js, bus.BucketA2AEndpoints)
	if err != nil {
		return nil, err
	}
	sessions, err := admission.OpenConversations(ctx, js, client)
	if err != nil {
		return nil, err
	}
	return &records{tasks: tasks, sessions: sessions}, nil
}

// task returns a task's record, or nil when the task was created through
// another endpoint.
func (r *records) task(ctx context.Context, runID string) (*taskRecord, error) {
	rec, _, err := r.tasks.Get(ctx, taskKey(runID))
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, nil
	}
	return rec, err
}

// conversation returns the conversation of a caller's session, starting one
// the first time the session is named.
func (r *records) conversation(ctx context.Context, callerID, sessionID string) (string, error) {
	return r.sessions.Get(ctx, sessionKey(callerID, sessionID))
}
