package runfollow

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestRegions_RunsOfTwoRegionsAreFollowedInTheirOwnStreamsWhileTheOriginIsDown:
// three regions of one server each, east the origin. A run of a west
// agent and a run of a south agent (a delegation between them) are
// followed together from west while east is down: each in its home
// region's stream, so neither waits for the origin's gathered log.
func TestRegions_RunsOfTwoRegionsAreFollowedInTheirOwnStreamsWhileTheOriginIsDown(t *testing.T) {
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}, {Name: "south"}}})
	conns := sc.ProvisionedRegions(t, "east", "east", "west", "south")
	homes := map[string]string{"agent-of-west": "west", "agent-of-south": "south"}
	r := NewRegions(conns["west"], Config{}, func(_ context.Context, agentID string) (string, error) {
		if home, ok := homes[agentID]; ok {
			return home, nil
		}
		return "", mesh.ErrNotFound
	})
	sc.Stop("east")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	parent := &mesh.TaskRun{ID: "parent-run", TargetAgentID: "agent-of-west"}
	child := &mesh.TaskRun{ID: "child-run", TargetAgentID: "agent-of-south"}
	runs, err := r.FollowRuns(ctx, parent, child)
	if err != nil {
		t.Fatalf("follow a west run and a south run with east down: %v", err)
	}
	defer runs.Stop()

	publish := func(region string, run *mesh.TaskRun, rev uint64) {
		t.Helper()
		err := bus.NewPublisher(conns[region].JS, "test").Publish(ctx, bus.Event{
			Type: mesh.EventTaskRunProgress, Kind: mesh.KindTaskRun, AgentID: run.TargetAgentID, Subject: run.ID,
			ID: fmt.Sprintf("%s-%d", run.ID, rev), Sequence: rev,
			Data: mesh.TaskRun{ID: run.ID, TargetAgentID: run.TargetAgentID, Status: mesh.StatusRunning, Revision: rev},
		})
		if err != nil {
			t.Fatalf("publish in %s: %v", region, err)
		}
	}
	publish("south", child, 1)
	publish("west", parent, 1)
	publish("south", child, 2)
	got := map[string][]uint64{}
	for range 3 {
		run, err := runs.NextRun(ctx)
		if err != nil {
			t.Fatalf("next change, having %v: %v", got, err)
		}
		got[run.ID] = append(got[run.ID], run.Revision)
	}
	if fmt.Sprint(got[parent.ID]) != "[1]" || fmt.Sprint(got[child.ID]) != "[1 2]" {
		t.Fatalf("changes read: %v; want the parent's revision 1 and the child's 1 and 2, in order", got)
	}
	runs.Stop()
	// Every call after Stop says so, also once the followers of the two
	// streams have ended with the stop (for a second of calls).
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		if _, err := runs.NextRun(ctx); err != ErrStopped {
			t.Fatalf("NextRun after Stop: %v; want ErrStopped", err)
		}
	}
}
