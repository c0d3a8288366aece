package agents_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestHomeRegion_SetAtCreationAndMovedOnlyWithoutOpenRuns: an agent is
// homed in the platform's region unless the create names one; a move is
// refused while one of its runs has not ended, and allowed once none has.
func TestHomeRegion_SetAtCreationAndMovedOnlyWithoutOpenRuns(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	if p.Region() != bus.DefaultRegion {
		t.Fatalf("the embedded server's platform serves region %q, want %q", p.Region(), bus.DefaultRegion)
	}
	local := p.CreateAgent("here")
	if local.HomeRegion != bus.DefaultRegion {
		t.Fatalf("agent created without a home region is homed in %q, want %q", local.HomeRegion, bus.DefaultRegion)
	}
	var west mesh.Agent
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Owner: true, JSON: map[string]any{"name": "far", "home_region": "west"}}).
		Expect(t, http.StatusCreated).Decode(t, &west)
	if west.HomeRegion != "west" {
		t.Fatalf("agent created for west is homed in %q", west.HomeRegion)
	}
	for _, bad := range []string{"West", "us_west", "-west", "west-", "a-region-name-longer-than-32-chars"} {
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Owner: true, JSON: map[string]any{"name": "bad", "home_region": bad}}).
			ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
		p.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + local.ID, Owner: true, JSON: map[string]any{"home_region": bad}}).
			ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	}

	run := p.CreateTask(local.ID, "stays where it was created")
	move := meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + local.ID, Owner: true, JSON: map[string]any{"home_region": "east"}}
	p.Send(t, move).ExpectError(t, http.StatusConflict, mesh.CodeConflict)
	// Other edits, and naming the region it already has, are not moves.
	var edited mesh.Agent
	p.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + local.ID, Owner: true, JSON: map[string]any{"description": "busy", "home_region": bus.DefaultRegion}}).
		Expect(t, http.StatusOK).Decode(t, &edited)
	if edited.HomeRegion != bus.DefaultRegion || edited.Description != "busy" {
		t.Fatalf("edited agent %+v", edited)
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/cancel", Owner: true}).Expect(t, http.StatusOK)
	var moved mesh.Agent
	p.Send(t, move).Expect(t, http.StatusOK).Decode(t, &moved)
	if moved.HomeRegion != "east" {
		t.Fatalf("moved agent is homed in %q", moved.HomeRegion)
	}
	var got mesh.Agent
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts/" + local.ID, Owner: true}).Expect(t, http.StatusOK).Decode(t, &got)
	if got.HomeRegion != "east" {
		t.Fatalf("agent read after the move is homed in %q", got.HomeRegion)
	}
}

// TestHomeRegion_AgentsStoredWithoutOneAreHomedAtStart: an agent record
// written before agents had a home region gets the region of the agents
// service that starts on it.
func TestHomeRegion_AgentsStoredWithoutOneAreHomedAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.DataDir = dir })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := p.Conn().JS.KeyValue(ctx, bus.BucketAgents)
	if err != nil {
		t.Fatal(err)
	}
	id := mesh.NewID()
	old, _ := json.Marshal(map[string]any{"agent_id": id, "name": "older", "created_at": time.Now().UTC(), "updated_at": time.Now().UTC()})
	if _, err := kv.Create(ctx, id, old); err != nil {
		t.Fatal(err)
	}
	p.Stop()

	p = meshtest.StartPlatform(t, func(c *platform.Config) { c.DataDir = dir })
	var got mesh.Agent
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts/" + id, Owner: true}).Expect(t, http.StatusOK).Decode(t, &got)
	if got.HomeRegion != bus.DefaultRegion || got.Name != "older" {
		t.Fatalf("agent stored without a home region, after a restart: %+v", got)
	}
}
