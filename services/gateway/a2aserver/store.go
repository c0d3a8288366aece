package a2aserver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// taskStore is the SDK's taskstore.Store over task runs: a task is read from
// its run record (state, output, artifacts) and the A2A bucket (history,
// caller), and its version is the run record's revision, so the store's
// optimistic concurrency is the run's compare-and-set: an update made
// against a version the run has moved past is refused. Writes change only
// the A2A bucket; runs change only through the task queue.
//
// Every method reads the caller from the context: a task the caller may not
// see is not found (spec 1.0 §3.3.2: not found and not visible are one
// answer).
type taskStore struct {
	s *Server
}

var _ taskstore.Store = (*taskStore)(nil)

// Create records a task whose run exists (the executor created it): the
// first message and the caller. A second Create of the same task fails with
// ErrTaskAlreadyExists.
func (t *taskStore) Create(ctx context.Context, task *a2a.Task) (taskstore.TaskVersion, error) {
	rq := requestOf(ctx)
	run, err := t.s.client.GetTaskRun(ctx, string(task.ID))
	if err != nil {
		return taskstore.TaskVersionMissing, toA2A(t.s.log, err)
	}
	existing, _, err := t.s.records.get(ctx, run.TargetAgentID, run.ID)
	if err != nil {
		return taskstore.TaskVersionMissing, toA2A(t.s.log, err)
	}
	if existing != nil {
		return taskstore.TaskVersion(run.Revision), taskstore.ErrTaskAlreadyExists
	}
	rec := &record{
		TaskID: run.ID, AgentID: run.TargetAgentID, ContextID: run.ConversationID, Caller: rq.caller.ID,
		Version: rq.version, History: task.History, CreatedAt: time.Now().UTC(),
	}
	if err := t.s.records.create(ctx, rec); err != nil {
		return taskstore.TaskVersionMissing, toA2A(t.s.log, err)
	}
	if err := t.s.records.claimContext(ctx, run.ConversationID, run.TargetAgentID, rq.caller.ID); err != nil && !errors.Is(err, errUnknownContext) {
		return taskstore.TaskVersionMissing, toA2A(t.s.log, err)
	}
	return taskstore.TaskVersion(run.Revision), nil
}

// Update stores a task's history, provided its run is still at
// req.PrevVersion; otherwise ErrConcurrentModification.
func (t *taskStore) Update(ctx context.Context, req *taskstore.UpdateRequest) (taskstore.TaskVersion, error) {
	run, err := t.s.client.GetTaskRun(ctx, string(req.Task.ID))
	if errors.Is(err, mesh.ErrNotFound) {
		return taskstore.TaskVersionMissing, a2a.ErrTaskNotFound
	}
	if err != nil {
		return taskstore.TaskVersionMissing, toA2A(t.s.log, err)
	}
	if req.PrevVersion != taskstore.TaskVersionMissing && taskstore.TaskVersion(run.Revision) != req.PrevVersion {
		return taskstore.TaskVersion(run.Revision), taskstore.ErrConcurrentModification
	}
	_, err = t.s.records.modify(ctx, run.TargetAgentID, run.ID, func(rec *record) error {
		rec.History = req.Task.History
		return nil
	})
	if errors.Is(err, mesh.ErrNotFound) {
		// A task of another endpoint gets its A2A record when first continued
		// here (only the owner sees such tasks).
		rq := requestOf(ctx)
		err = t.s.records.create(ctx, &record{
			TaskID: run.ID, AgentID: run.TargetAgentID, ContextID: run.ConversationID, Caller: rq.caller.ID,
			Version: rq.version, History: req.Task.History, CreatedAt: time.Now().UTC(),
		})
	}
	if err != nil {
		return taskstore.TaskVersionMissing, toA2A(t.s.log, err)
	}
	return taskstore.TaskVersion(run.Revision), nil
}

// Get returns a task the caller may see.
func (t *taskStore) Get(ctx context.Context, taskID a2a.TaskID) (*taskstore.StoredTask, error) {
	st, _, err := t.get(ctx, string(taskID))
	return st, err
}

// get returns the task and its run.
func (t *taskStore) get(ctx context.Context, taskID string) (*taskstore.StoredTask, *mesh.TaskRun, error) {
	rq := requestOf(ctx)
	if !mesh.ValidID(taskID) {
		return nil, nil, errTaskNotFound
	}
	var (
		rec    *record
		recErr error
		done   = make(chan struct{})
	)
	// The run and the A2A record are read at once: two round trips in the
	// time of one.
	go func() {
		defer close(done)
		rec, _, recErr = t.s.records.get(ctx, rq.agent.ID, taskID)
	}()
	run, err := t.s.client.GetTaskRun(ctx, taskID)
	<-done
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, nil, errTaskNotFound
	}
	if err != nil {
		return nil, nil, toA2A(t.s.log, err)
	}
	if rec == nil && recErr == nil {
		rec, recErr = t.s.records.getMoved(ctx, run)
	}
	if recErr != nil {
		return nil, nil, toA2A(t.s.log, recErr)
	}
	owner := ""
	if rec != nil {
		owner = rec.Caller
	}
	if run.TargetAgentID != rq.agent.ID || !rq.caller.Sees(owner) {
		return nil, nil, errTaskNotFound
	}
	return &taskstore.StoredTask{Task: t.task(run, rec), Version: taskstore.TaskVersion(run.Revision), User: owner}, run, nil
}

// task builds the A2A task of a run and its record.
func (t *taskStore) task(run *mesh.TaskRun, rec *record) *a2a.Task {
	history := []*a2a.Message{a2atask.InputMessage(run)}
	if rec != nil {
		history = rec.History
	}
	return a2atask.Task(run, history, t.s.download)
}

// maxPageSize bounds a ListTasks page.
const maxPageSize = 100

// List pages the tasks the caller may see, newest first, with the last task
// id of a page as the token of the next. The owner sees every task of the
// agent (through any endpoint); other callers the tasks they created. Creation
// order (not the last update) keeps pages stable while tasks change.
func (t *taskStore) List(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	rq := requestOf(ctx)
	size := req.PageSize
	switch {
	case size == 0:
		size = meshapi.DefaultListLimit
	case size < 0 || size > maxPageSize:
		return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("pageSize must be between 1 and %d", maxPageSize))
	}
	if req.PageToken != "" && !mesh.ValidID(req.PageToken) {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "pageToken is not one this server gave")
	}
	if req.HistoryLength != nil && *req.HistoryLength < 0 {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "historyLength must not be negative")
	}
	var status mesh.Status
	var state a2a.TaskState
	// The 1.x JavaScript client (@a2a-js/sdk 1.3.0) serialises an absent
	// status filter as the protobuf placeholder "UNRECOGNIZED" (its toJSON
	// meets undefined where it expects 0); that means no filter, not an
	// unknown state, or that client could not list at all.
	if req.Status != a2a.TaskStateUnspecified && req.Status != "UNRECOGNIZED" {
		if status = statusOf(req.Status); status == "" {
			return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("status %q is not a task state this server has", req.Status))
		}
		state = req.Status
	}
	if req.ContextID != "" && !mesh.ValidID(req.ContextID) {
		return &a2a.ListTasksResponse{Tasks: []*a2a.Task{}, PageSize: size}, nil
	}
	match := func(run *mesh.TaskRun) bool {
		return run.TargetAgentID == rq.agent.ID && (status == "" || run.Status == status) &&
			(state == "" || a2atask.RunState(run) == state) &&
			(req.ContextID == "" || run.ConversationID == req.ContextID) &&
			(req.StatusTimestampAfter == nil || run.UpdatedAt.After(*req.StatusTimestampAfter))
	}
	var runs []*mesh.TaskRun
	var err error
	if rq.caller.Owner() {
		runs, err = t.agentRuns(ctx, rq.agent.ID, status, req.ContextID, match)
	} else {
		runs, err = t.callerRuns(ctx, rq, match)
	}
	if err != nil {
		return nil, toA2A(t.s.log, err)
	}
	out := &a2a.ListTasksResponse{Tasks: []*a2a.Task{}, TotalSize: len(runs), PageSize: size}
	start := 0
	if req.PageToken != "" {
		start = sort.Search(len(runs), func(i int) bool { return runs[i].ID < req.PageToken })
	}
	end := min(start+size, len(runs))
	for _, run := range runs[start:end] {
		var rec *record
		if req.HistoryLength != nil && *req.HistoryLength > 0 {
			if rec, _, err = t.s.records.get(ctx, run.TargetAgentID, run.ID); err != nil {
				return nil, toA2A(t.s.log, err)
			}
		}
		task := t.task(run, rec)
		trimHistory(task, req.HistoryLength)
		if req.HistoryLength == nil || *req.HistoryLength == 0 {
			task.History = nil
		}
		if !req.IncludeArtifacts {
			task.Artifacts = nil
		}
		out.Tasks = append(out.Tasks, task)
	}
	if end < len(runs) && end > start {
		out.NextPageToken = runs[end-1].ID
	}
	return out, nil
}

// agentRuns lists every run of an agent that matches, newest first.
func (t *taskStore) agentRuns(ctx context.Context, agentID string, status mesh.Status, contextID string, match func(*mesh.TaskRun) bool) ([]*mesh.TaskRun, error) {
	var out []*mesh.TaskRun
	cursor := ""
	for {
		page, err := t.s.client.ListTaskRuns(ctx, meshapi.ListTaskRunsRequest{
			AgentID: agentID, Status: status, ConversationID: contextID, Cursor: cursor, Limit: meshapi.MaxListLimit,
		})
		if err != nil {
			return nil, err
		}
		for i := range page.TaskRuns {
			if match(&page.TaskRuns[i]) {
				out = append(out, &page.TaskRuns[i])
			}
		}
		if page.NextCursor == "" {
			return out, nil
		}
		cursor = page.NextCursor
	}
}

// callerRuns lists the runs of the tasks the caller created that match,
// newest first.
func (t *taskStore) callerRuns(ctx context.Context, rq *request, match func(*mesh.TaskRun) bool) ([]*mesh.TaskRun, error) {
	if rq.caller.Anonymous() {
		// Callers without a credential are all one caller: listing would
		// show each of them everyone's tasks.
		return nil, nil
	}
	ids, err := t.s.records.callerTasks(ctx, rq.agent.ID, rq.caller.ID)
	if err != nil {
		return nil, err
	}
	var out []*mesh.TaskRun
	for _, id := range ids {
		run, err := t.s.client.GetTaskRun(ctx, id)
		if errors.Is(err, mesh.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if match(run) {
			out = append(out, run)
		}
	}
	return out, nil
}

// statusOf is the run status of an A2A state ("" for states runs never
// have): rejected tasks are failed runs (a2atask.RunState tells them apart).
func statusOf(s a2a.TaskState) mesh.Status {
	if s == a2a.TaskStateRejected {
		return mesh.StatusFailed
	}
	for _, st := range mesh.AllStatuses() {
		if a2atask.State(st) == s {
			return st
		}
	}
	return ""
}

// trimHistory applies historyLength (spec 1.0 §3.2.4): unset keeps all, 0
// none, n the last n messages.
func trimHistory(task *a2a.Task, n *int) {
	switch {
	case n == nil:
	case *n <= 0:
		task.History = nil
	case *n < len(task.History):
		task.History = task.History[len(task.History)-*n:]
	}
}

// sortNewestFirst orders time-ordered ids newest first.
func sortNewestFirst(ids []string) {
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
}
