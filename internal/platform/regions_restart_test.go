package platform_test

import (
	"net/http"
	"testing"

	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestRegions_AProcessStartedWhileTheOriginIsDownServesItsRegion: three
// regions of one server each (so the meta group keeps its quorum without
// any one of them, as docs/architecture.md advises), east the origin.
// With east down, a gateway started in west (a process rescheduled during
// the outage) starts on what west was provisioned with, without waiting
// for east, and serves west's agents: it reads them and creates their runs.
func TestRegions_AProcessStartedWhileTheOriginIsDownServesItsRegion(t *testing.T) {
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}, {Name: "south"}}})
	owner := secret.NewToken(secret.PrefixOwner)
	serveIn(t, sc, "east", "agents", "")
	serveIn(t, sc, "east", "gateway", owner)
	for _, service := range []string{"agents", "taskqueue", "registry"} {
		serveIn(t, sc, "west", service, "")
	}
	west := meshtest.Remote(t, "http://"+serveIn(t, sc, "west", "gateway", "").HTTPAddr(), owner)
	var agent mesh.Agent
	west.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Owner: true, JSON: map[string]any{"name": "westerner", "home_region": "west"}}).
		Expect(t, http.StatusCreated).Decode(t, &agent)

	sc.Stop("east")
	// Started with the owner credential, as every gateway of a deployment
	// is: its hash, stored when the platform first started, is read from
	// west's copy of the settings, not written again.
	again := meshtest.Remote(t, "http://"+serveIn(t, sc, "west", "gateway", owner).HTTPAddr(), owner)
	var got mesh.Agent
	again.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts/" + agent.ID, Owner: true}).Expect(t, http.StatusOK).Decode(t, &got)
	if got.ID != agent.ID || got.HomeRegion != "west" {
		t.Fatalf("the gateway started with east down reads west's agent as %+v", got)
	}
	again.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs", Owner: true, JSON: map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "while east is down"}}}).
		Expect(t, http.StatusCreated)
}
