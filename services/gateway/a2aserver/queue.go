package a2aserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/eventqueue"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/internal/runfollow"
	"github.com/a2amesh/a2amesh/mesh"
)

// busQueues is the SDK's eventqueue.Manager over the event stream: a
// task's queue is its run's CloudEvents (and its artifacts'), read with a
// run follower (internal/runfollow) and translated into A2A events. Every reader
// reads the one stream in its one order, so several subscribers to a task
// see the same events in the same order, whichever gateway instance each is
// connected to, and a gateway restart loses nothing a reader has not yet
// seen.
type busQueues struct {
	s *Server
}

var _ eventqueue.Manager = (*busQueues)(nil)

// errWriterUnsupported: the task queue writes a task's events (runs change
// only through it), so nothing in the A2A endpoint writes to a queue.
var errWriterUnsupported = errors.New("a2a: task events are published by the task queue")

// CreateReader follows a task of the request's agent from now on.
func (q *busQueues) CreateReader(ctx context.Context, taskID a2a.TaskID) (eventqueue.Reader, error) {
	return q.follow(ctx, requestOf(ctx).agent.ID, string(taskID))
}

// CreateWriter is not supported: see errWriterUnsupported.
func (q *busQueues) CreateWriter(context.Context, a2a.TaskID) (eventqueue.Writer, error) {
	return nil, errWriterUnsupported
}

// Destroy has nothing to free: each reader owns its follower.
func (q *busQueues) Destroy(context.Context, a2a.TaskID) error { return nil }

// follow starts reading a run's events from now on. Callers take the
// task's snapshot after this and seed the reader with it, so nothing that
// happens in between is lost or told twice.
func (q *busQueues) follow(ctx context.Context, agentID, taskID string) (*follower, error) {
	if !mesh.ValidID(agentID) || !mesh.ValidID(taskID) {
		return nil, errTaskNotFound
	}
	src, _, err := q.s.cfg.Runs.Of(ctx, agentID)
	if err != nil {
		return nil, fmt.Errorf("follow task %s: %w", taskID, err)
	}
	runs, err := src.Follow(ctx, runfollow.RunSubjects(agentID, taskID, true), runfollow.Now())
	if err != nil {
		return nil, fmt.Errorf("follow task %s: %w", taskID, err)
	}
	return &follower{runs: runs, taskID: taskID, url: q.s.download, sent: map[a2a.ArtifactID]bool{}, last: a2atask.Final}, nil
}

// follower is one reader of a task's events.
type follower struct {
	runs   *runfollow.Follower
	taskID string
	// last tells the state after which the reader ends: a final state
	// (a2atask.Final) for a sender, who is answered when the task asks for
	// input; a terminal one for a subscriber.
	last    func(a2a.TaskState) bool
	url     a2atask.ArtifactURL
	after   uint64
	context string
	sent    map[a2a.ArtifactID]bool
	pending []*eventqueue.Message
	ended   bool
}

var _ eventqueue.Reader = (*follower)(nil)

// seed tells the reader what the caller has already seen: the task as of
// run revision rev. Earlier events and the artifacts it shows are skipped.
func (f *follower) seed(task *a2a.Task, rev uint64) {
	f.after, f.context = rev, task.ContextID
	for _, a := range task.Artifacts {
		f.sent[a.ID] = true
	}
	f.ended = f.last(task.Status.State)
}

// Read returns the next A2A event of the task; after the event of its last
// state it returns eventqueue.ErrQueueClosed.
func (f *follower) Read(ctx context.Context) (*eventqueue.Message, error) {
	for len(f.pending) == 0 {
		if f.ended {
			return nil, eventqueue.ErrQueueClosed
		}
		e, err := f.runs.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("follow task %s: %w", f.taskID, err)
		}
		f.translate(e)
	}
	msg := f.pending[0]
	f.pending = f.pending[1:]
	return msg, nil
}

// Close stops the reader's follower.
func (f *follower) Close() error {
	f.runs.Stop()
	return nil
}

// translate turns one bus event into the A2A events it means.
func (f *follower) translate(e *runfollow.Event) {
	switch e.Kind() {
	case mesh.KindArtifact:
		a, ok := runfollow.ArtifactOf(e, f.taskID)
		if !ok || a.Role == mesh.ArtifactRoleInput {
			return
		}
		f.artifact(&mesh.TaskRun{ID: f.taskID, TargetAgentID: a.AgentID, ConversationID: f.context}, a2atask.FileArtifact(a.AgentID, a.Ref(), f.url))
	case mesh.KindTaskRun:
		typ := bus.EventType(e.Header)
		if typ == mesh.EventTaskRunUsage {
			// Usage is not part of an A2A task; the event comes before the
			// status change of the same revision, which must not be
			// taken for seen.
			return
		}
		if mesh.DecidedByPolicyAlone(typ, e.Data) {
			// A step the policy decided without asking left the task as
			// it was: no status to tell.
			return
		}
		run, err := e.TaskRun()
		if err != nil || run.ID != f.taskID || run.Revision <= f.after {
			return
		}
		f.after, f.context = run.Revision, run.ConversationID
		f.run(run, typ)
	}
}

// run queues the events of a run's new state.
func (f *follower) run(run *mesh.TaskRun, typ string) {
	if typ == mesh.EventTaskRunCompleted {
		// The run's files and its output, each an artifact not yet told.
		for _, a := range a2atask.Artifacts(run, f.url) {
			f.artifact(run, a)
		}
	}
	ev := a2atask.StatusEvent(run)
	f.push(ev, run.Revision)
	f.ended = f.last(ev.Status.State)
}

func (f *follower) artifact(run *mesh.TaskRun, a *a2a.Artifact) {
	if f.sent[a.ID] {
		return
	}
	f.sent[a.ID] = true
	f.push(a2atask.ArtifactEvent(run, a), f.after)
}

func (f *follower) push(ev a2a.Event, rev uint64) {
	f.pending = append(f.pending, &eventqueue.Message{Event: ev, TaskVersion: taskstore.TaskVersion(rev), Protocol: a2a.Version})
}
