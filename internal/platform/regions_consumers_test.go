package platform_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestRegions_AConsumerCredentialOfEveryAgentReadsARegionThatJoinsLater: a
// consumer credential of every agent made while east alone runs services
// reads east's stream; once west's services start, it gains a durable
// consumer on west's stream, listed in its streams.
func TestRegions_AConsumerCredentialOfEveryAgentReadsARegionThatJoinsLater(t *testing.T) {
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}, {Name: "south"}}})
	owner := secret.NewToken(secret.PrefixOwner)
	serveIn(t, sc, "east", "credentials", "")
	east := meshtest.Remote(t, "http://"+serveIn(t, sc, "east", "gateway", owner).HTTPAddr(), owner)
	var con meshapi.CreateConsumerResponse
	east.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/consumers", Owner: true, JSON: map[string]any{"name": "every region"}}).
		Expect(t, http.StatusCreated).Decode(t, &con)
	if len(con.Streams) != 1 || con.Streams[0].Stream != bus.EventStream {
		t.Fatalf("a consumer credential of every agent made with east alone: streams %+v; want east's", con.Streams)
	}

	serveIn(t, sc, "west", "credentials", "")
	var listed meshapi.ConsumerList
	waitFor(t, 30*time.Second, "the credential to list west's stream", func() bool {
		east.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/consumers", Owner: true}).Expect(t, http.StatusOK).Decode(t, &listed)
		return len(listed.Consumers) == 1 && slices.ContainsFunc(listed.Consumers[0].Streams, func(rs bus.RegionStream) bool {
			return rs.Region == "west" && rs.Stream == bus.RegionEventStream("west")
		})
	})
	_, js := sc.Connect("west", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.Consumer(ctx, bus.RegionEventStream("west"), con.DurableName); err != nil {
		t.Fatalf("the credential's consumer on west's stream: %v", err)
	}
}

// TestRegions_AConsumerCredentialOfOneAgentFollowsTheAgentToItsNewHome: a
// consumer credential of an agent homed in east reads east's stream; once
// the agent moves to west, whose stream then stores its events, the
// credential gains a durable consumer there, listed in its streams after
// the one it was made on.
func TestRegions_AConsumerCredentialOfOneAgentFollowsTheAgentToItsNewHome(t *testing.T) {
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}, {Name: "south"}}})
	owner := secret.NewToken(secret.PrefixOwner)
	for _, region := range []string{"east", "west"} {
		for _, service := range []string{"credentials", "agents", "taskqueue"} {
			serveIn(t, sc, region, service, "")
		}
	}
	east := meshtest.Remote(t, "http://"+serveIn(t, sc, "east", "gateway", owner).HTTPAddr(), owner)
	var agent mesh.Agent
	east.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Owner: true, JSON: map[string]any{"name": "mover", "home_region": "east"}}).
		Expect(t, http.StatusCreated).Decode(t, &agent)
	var con meshapi.CreateConsumerResponse
	east.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/consumers", Owner: true, JSON: map[string]any{"name": "the mover's", "agent_id": agent.ID}}).
		Expect(t, http.StatusCreated).Decode(t, &con)
	if con.Stream != bus.EventStream || len(con.Streams) != 0 {
		t.Fatalf("a consumer credential of an east agent: stream %s, streams %+v; want east's alone", con.Stream, con.Streams)
	}

	east.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + agent.ID, Owner: true, JSON: map[string]any{"home_region": "west"}}).
		Expect(t, http.StatusOK)
	var listed meshapi.ConsumerList
	waitFor(t, 30*time.Second, "the credential to list the agent's new home's stream", func() bool {
		east.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/consumers", Owner: true}).Expect(t, http.StatusOK).Decode(t, &listed)
		return len(listed.Consumers) == 1 && len(listed.Consumers[0].Streams) == 2 &&
			listed.Consumers[0].Streams[0].Stream == bus.EventStream && listed.Consumers[0].Streams[1].Stream == bus.RegionEventStream("west")
	})
	_, js := sc.Connect("west", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.Consumer(ctx, bus.RegionEventStream("west"), con.DurableName); err != nil {
		t.Fatalf("the credential's consumer on west's stream: %v", err)
	}
}
