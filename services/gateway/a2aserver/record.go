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
	"github.com/a2amesh/a2amesh/services/internal/homes"
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

// records reads and writes the A2A bucket of each agent's home region,
// which keeps its tasks beside their runs (see bus.IsRegionalBucket).
type records struct {
	buckets *bus.RegionRecords[struct{}]
	homes   *homes.Directory
}

// homeRecords is one region's A2A bucket, read as each kind of record it
// keeps.
type homeRecords struct {
	tasks    *bus.Records[record]
	marks    *bus.Records[struct{}]
	contexts *bus.Records[contextRecord]
}

// openRecords opens this region's bucket; homes tells an agent's home
// region (nil: every agent's records are kept in this region's bucket).
func openRecords(ctx context.Context, js jetstream.JetStream, homes *homes.Directory) (*records, error) {
	r := &records{buckets: bus.NewRegionRecords[struct{}](js, bus.BucketA2ATasks), homes: homes}
	if _, err := r.buckets.In(ctx, ""); err != nil {
		return nil, err
	}
	return r, nil
}

// of returns the bucket of an agent's home region.
func (r *records) of(ctx context.Context, agentID string) (*homeRecords, error) {
	region := ""
	if r.homes != nil {
		var err error
		if region, err = r.homes.Of(ctx, agentID); err != nil {
			return nil, err
		}
	}
	return r.in(ctx, region)
}

// in returns region's bucket ("": this region's).
func (r *records) in(ctx context.Context, region string) (*homeRecords, error) {
	marks, err := r.buckets.In(ctx, region)
	if err != nil {
		return nil, err
	}
	return &homeRecords{
		tasks:    bus.RecordsOf[record](marks),
		marks:    marks,
		contexts: bus.RecordsOf[contextRecord](marks),
	}, nil
}

// get returns a task's record and its bucket revision, or nil when the task
// has none (it was created through another endpoint).
func (r *records) get(ctx context.Context, agentID, taskID string) (*record, uint64, error) {
	h, err := r.of(ctx, agentID)
	if err != nil {
		return nil, 0, err
	}
	rec, rev, err := h.tasks.Get(ctx, taskKey(taskID))
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, 0, nil
	}
	return rec, rev, err
}

// getMoved returns the record of a task created before its agent moved to
// another home region: kept where the run is (mesh.TaskRun.Region). Nil
// when the agent did not move since.
func (r *records) getMoved(ctx context.Context, run *mesh.TaskRun) (*record, error) {
	if r.homes == nil || run.Region == "" {
		return nil, nil
	}
	home, err := r.homes.Of(ctx, run.TargetAgentID)
	if err != nil || home == run.Region {
		return nil, err
	}
	h, err := r.in(ctx, run.Region)
	if err != nil {
		return nil, err
	}
	rec, _, err := h.tasks.Get(ctx, taskKey(run.ID))
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, nil
	}
	return rec, err
}

// create stores a new task's record and its caller marker. A record that
// exists already (a retried create of the same task) is kept.
func (r *records) create(ctx context.Context, rec *record) error {
	h, err := r.of(ctx, rec.AgentID)
	if err != nil {
		return fmt.Errorf("record A2A task %s: %w", rec.TaskID, err)
	}
	if _, err := h.tasks.Create(ctx, taskKey(rec.TaskID), rec); err != nil && !errors.Is(err, mesh.ErrConflict) {
		return fmt.Errorf("record A2A task %s: %w", rec.TaskID, err)
	}
	if _, err := h.marks.Put(ctx, callerKey(rec.AgentID, rec.Caller, rec.TaskID), &struct{}{}); err != nil {
		return fmt.Errorf("record A2A task %s: %w", rec.TaskID, err)
	}
	return nil
}

// modify changes a task's record with compare-and-set on its revision.
func (r *records) modify(ctx context.Context, agentID, taskID string, fn func(*record) error) (*record, error) {
	h, err := r.of(ctx, agentID)
	if err != nil {
		return nil, err
	}
	rec, _, err := h.tasks.Modify(ctx, taskKey(taskID), fn)
	return rec, err
}

// callerTasks lists the ids of the tasks a caller created with an agent,
// newest first (ids are time-ordered).
func (r *records) callerTasks(ctx context.Context, agentID, caller string) ([]string, error) {
	h, err := r.of(ctx, agentID)
	if err != nil {
		return nil, err
	}
	lister, err := h.marks.KV().ListKeysFiltered(ctx, callerPrefix(agentID, caller))
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
	h, err := r.of(ctx, agentID)
	if err != nil {
		return err
	}
	want := &contextRecord{AgentID: agentID, Caller: caller}
	_, err = h.contexts.Create(ctx, contextKey(contextID), want)
	if err == nil {
		return nil
	}
	if !errors.Is(err, mesh.ErrConflict) {
		return err
	}
	got, _, err := h.contexts.Get(ctx, contextKey(contextID))
	if err != nil {
		return err
	}
	if got.AgentID != agentID || got.Caller != caller {
		return errUnknownContext
	}
	return nil
}

// contextOwner returns who a context of an agent belongs to, or nil when no
// A2A task of the agent claimed it.
func (r *records) contextOwner(ctx context.Context, agentID, contextID string) (*contextRecord, error) {
	h, err := r.of(ctx, agentID)
	if err != nil {
		return nil, err
	}
	got, _, err := h.contexts.Get(ctx, contextKey(contextID))
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, nil
	}
	return got, err
}
