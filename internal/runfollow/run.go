package runfollow

import (
	"context"
	"encoding/json"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// RunSubjects are the subjects of a run's events: its changes, and with
// artifacts every artifact event of its agent (an artifact names its run in
// its data; see ArtifactOf).
func RunSubjects(agentID, runID string, artifacts bool) []string {
	subjects := []string{bus.EventSubject(agentID, string(mesh.KindTaskRun), runID)}
	if artifacts {
		subjects = append(subjects, bus.EventFilter(agentID, string(mesh.KindArtifact), ""))
	}
	return subjects
}

// FollowRuns follows the changes of runs (without their artifacts) from
// now on. Read the runs after it returns to know where the changes start.
func (s *Source) FollowRuns(ctx context.Context, runs ...*mesh.TaskRun) (*Follower, error) {
	var subjects []string
	for _, run := range runs {
		subjects = append(subjects, RunSubjects(run.TargetAgentID, run.ID, false)...)
	}
	return s.Follow(ctx, subjects, Now())
}

// NextRun returns the next change of a followed run as its event tells it,
// skipping events of other kinds.
func (f *Follower) NextRun(ctx context.Context) (*mesh.TaskRun, error) {
	for {
		e, err := f.Next(ctx)
		if err != nil {
			return nil, err
		}
		if run, err := e.TaskRun(); err == nil {
			return run, nil
		}
	}
}

// ArtifactOf returns the artifact an artifact event is about, when it
// belongs to run runID.
func ArtifactOf(e *Event, runID string) (*mesh.Artifact, bool) {
	if e.Kind() != mesh.KindArtifact {
		return nil, false
	}
	var a mesh.Artifact
	if json.Unmarshal(e.Data, &a) != nil || a.TaskRunID != runID {
		return nil, false
	}
	return &a, true
}

// Await waits until the run is settled (mesh.Status.Settled), for at most wait, and returns it as
// it is then.
func (s *Source) Await(ctx context.Context, client *meshapi.Client, run *mesh.TaskRun, wait time.Duration) (*mesh.TaskRun, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	f, err := s.FollowRuns(wctx, run)
	if err != nil {
		return nil, err
	}
	defer f.Stop()
	cur, err := client.GetTaskRun(wctx, run.ID)
	if err != nil {
		return nil, err
	}
	for !cur.Status.Settled() {
		next, err := f.NextRun(wctx)
		if err != nil {
			// Out of time (or the caller left): the run as it is.
			return client.GetTaskRun(context.WithoutCancel(ctx), run.ID)
		}
		if next.ID == cur.ID && next.Revision > cur.Revision {
			cur = next
		}
	}
	return cur, nil
}
