package agents_test

import (
	"context"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/agents"
)

// TestDelete_RunsEndedBetweenTheListingAndTheCancelAreNotAnError: an
// agent's delete lists its open runs, removes the account, then cancels
// what it listed. In between, the task queue's reaper may cancel a run
// (its agent is gone: the same cancel, with the same message) or the run
// may end otherwise (its owner canceled it). Neither fails the delete; the
// count is of the runs canceled because the agent was deleted, by
// whichever got there first, and a run listed twice counts once.
func TestDelete_RunsEndedBetweenTheListingAndTheCancelAreNotAnError(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("being deleted")
	reaped := p.CreateTask(agent.ID, "canceled by the reaper first")
	other := p.CreateTask(agent.ID, "canceled by its owner first")
	open := p.CreateTask(agent.ID, "still open")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := meshapi.NewClient(p.Conn().NC)
	if _, err := client.CancelTaskRun(ctx, meshapi.CancelTaskRunRequest{TaskRunID: reaped.ID, Reason: mesh.AgentDeletedMessage}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CancelTaskRun(ctx, meshapi.CancelTaskRunRequest{TaskRunID: other.ID, Reason: "no longer needed"}); err != nil {
		t.Fatal(err)
	}

	n, err := agents.CancelForDelete(ctx, client, []string{open.ID, reaped.ID, other.ID, open.ID})
	if err != nil || n != 2 {
		t.Fatalf("the delete's cancel answered %d, %v; want 2 (the open run and the one the reaper canceled), no error", n, err)
	}
	if got := p.GetTask(open.ID); got.Status != mesh.StatusCanceled || got.Error == nil || got.Error.Message != mesh.AgentDeletedMessage {
		t.Fatalf("the open run is %s (%+v); want canceled because its agent was deleted", got.Status, got.Error)
	}
	if got := p.GetTask(other.ID); got.Error == nil || got.Error.Message != "no longer needed" {
		t.Fatalf("the run its owner canceled now says %+v; want its owner's reason kept", got.Error)
	}
}
