package a2aserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
)

// record is what the A2A endpoint keeps about a task beyond its task run, in
// its own bucket: the messages exchanged (with their ids and roles), who
// created the task, the protocol version it was created with, and its push
// configurations. The run record stays the only truth about the task's
// state; this one is written only by the A2A endpoint.
type record struct {
	TaskID    string         `json:"task_id"`
	AgentID   string         `json:"agent_id"`
	ContextID string         `json:"context_id"`
	Caller    string         `json:"caller"`
	Version   string         `json:"version"`
	History   []*a2a.Message `json:"history"`
	Push      []pushConfig   `json:"push,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
}

// pushConfig is one push notification configuration of a task and the
// webhook subscription that delivers it.
type pushConfig struct {
	ID              string `json:"id"`
	WebhookID       string `json:"webhook_id"`
	URL             string `json:"url"`
	Token           string `json:"token,omitempty"`
	AuthScheme      string `json:"auth_scheme,omitempty"`
	AuthCredentials string `json:"auth_credentials,omitempty"`
	Version         string `json:"version"`
}

// contextRecord says whose a context (conversation) is, so a caller cannot
// add tasks to someone else's conversation and read its workspace.
type contextRecord struct {
	AgentID string `json:"agent_id"`
	Caller  string `json:"caller"`
}

// Keys of BucketA2ATasks: the record of a task; a marker per task under its
// agent and caller, so a caller's tasks are listed by key prefix (callers
// are hashed: bucket keys have a narrow alphabet); and the owner of a context.
func taskKey(taskID string) string { return "task." + taskID }
func callerKey(agentID, caller, taskID string) string {
	return "by." + agentID + "." + secret.Hash(caller)[:32] + "." + taskID
}
func callerPrefix(agentID, caller string) string {
	return "by." + agentID + "." + secret.Hash(caller)[:32] + ".*"
}
func contextKey(contextID string) string { return "ctx." + contextID }

// records reads and writes the A2A bucket.
type records struct {
	tasks    *bus.Records[record]
	marks    *bus.Records[struct{}]
	contexts *bus.Records[contextRecord]
}

func openRecords(ctx context.Context, js jetstream.JetStream) (*records, error) {
	tasks, err := bus.OpenRecords[record](ctx, js, bus.BucketA2ATasks)
	if err != nil {
		return nil, err
	}
	marks, err := bus.OpenRecords[struct{}](ctx, js, bus.BucketA2ATasks)
	if err != nil {
		return nil, err
	}
	contexts, err := bus.OpenRecords[contextRecord](ctx, js, bus.BucketA2ATasks)
	if err != nil {
		return nil, err
	}
	return &records{tasks: tasks, marks: marks, contexts: contexts}, nil
}

// get returns a task's record and its bucket revision, or nil when the task
// has none (it was created through another endpoint).
func (r *records) get(ctx context.Context, taskID string) (*record, uint64, error) {
	rec, rev, err := r.tasks.Get(ctx, taskKey(taskID))
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, 0, nil
	}
	return rec, rev, err
}

// create stores a new task's record and its caller marker. A record that
// exists already (a retried create of the same task) is kept.
func (r *records) create(ctx context.Context, rec *record) error {
	if _, err := r.tasks.Create(ctx, taskKey(rec.TaskID), rec); err != nil && !errors.Is(err, mesh.ErrConflict) {
		return fmt.Errorf("record A2A task %s: %w", rec.TaskID, err)
	}
	if _, err := r.marks.Put(ctx, callerKey(rec.AgentID, rec.Caller, rec.TaskID), &struct{}{}); err != nil {
		return fmt.Errorf("record A2A task %s: %w", rec.TaskID, err)
	}
	return nil
}

// modify changes a task's record with compare-and-set on its revision.
func (r *records) modify(ctx context.Context, taskID string, fn func(*record) error) (*record, error) {
	rec, _, err := r.tasks.Modify(ctx, taskKey(taskID), fn)
	return rec, err
}

// callerTasks lists the ids of the tasks a caller created with an agent,
// newest first (ids are time-ordered).
func (r *records) callerTasks(ctx context.Context, agentID, caller string) ([]string, error) {
	lister, err := r.marks.KV().ListKeysFiltered(ctx, callerPrefix(agentID, caller))
	if err != nil {
		return nil, err
	}
	var ids []string
	for key := range lister.Keys() {
		ids = append(ids, key[len(key)-36:])
	}
	sortNewestFirst(ids)
	return ids, nil
}

// claimContext records that a context belongs to a caller of an agent, or
// checks that it does when it was claimed before.
func (r *records) claimContext(ctx context.Context, contextID, agentID, caller string) error {
	want := &contextRecord{AgentID: agentID, Caller: caller}
	_, err := r.contexts.Create(ctx, contextKey(contextID), want)
	if err == nil {
		return nil
	}
	if !errors.Is(err, mesh.ErrConflict) {
		return err
	}
	got, _, err := r.contexts.Get(ctx, contextKey(contextID))
	if err != nil {
		return err
	}
	if got.AgentID != agentID || got.Caller != caller {
		return errUnknownContext
	}
	return nil
}

// contextOwner returns who a context belongs to, or nil when no A2A task
// claimed it.
func (r *records) contextOwner(ctx context.Context, contextID string) (*contextRecord, error) {
	got, _, err := r.contexts.Get(ctx, contextKey(contextID))
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, nil
	}
	return got, err
}
