package platform_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRegions_AnAgentsEventsAreStoredInItsHomeRegionWhicheverRegionChangesIt:
// an agent homed in west, created and changed through east (whose
// services own its record), has its agent events stored in west's event
// stream, which the webhooks and consumer credentials of that agent read.
func TestRegions_AnAgentsEventsAreStoredInItsHomeRegionWhicheverRegionChangesIt(t *testing.T) {
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}, {Name: "south"}}})
	owner := secret.NewToken(secret.PrefixOwner)
	serveIn(t, sc, "east", "agents", "")
	east := meshtest.Remote(t, "http://"+serveIn(t, sc, "east", "gateway", owner).HTTPAddr(), owner)
	serveIn(t, sc, "west", "agents", "")

	var agent mesh.Agent
	east.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Owner: true, JSON: map[string]any{"name": "westerner", "home_region": "west"}}).
		Expect(t, http.StatusCreated).Decode(t, &agent)
	east.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + agent.ID, Owner: true, JSON: map[string]any{"description": "changed in east"}}).
		Expect(t, http.StatusOK)

	_, js := sc.Connect("west", 0)
	var got []string
	waitFor(t, 30*time.Second, "west's event stream to hold the agent's creation and change", func() bool {
		got = agentEventTypes(t, js, bus.RegionEventStream("west"), agent.ID)
		return len(got) == 2 && got[0] == mesh.EventAgentCreated && got[1] == mesh.EventAgentUpdated
	})
}

// agentEventTypes lists the types of the events about an agent a stream
// holds, in order (none when the stream does not answer).
func agentEventTypes(t *testing.T, js jetstream.JetStream, stream, agentID string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{bus.AgentEventsFilter(agentID)}})
	if err != nil {
		return nil
	}
	batch, err := c.FetchNoWait(100)
	if err != nil {
		return nil
	}
	var types []string
	for m := range batch.Messages() {
		types = append(types, m.Headers().Get("ce-type"))
	}
	return types
}
