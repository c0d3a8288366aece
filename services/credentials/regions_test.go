package credentials_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/credentials"
	"github.com/a2amesh/a2amesh/services/taskqueue"
)

// TestAttach_GivesTheHomeRegionsURLsFirstAndTheOthersAsFallbacks: a second
// region's credentials service records its URLs as it starts; pairing, answered by either
// region, gives an agent homed there that region's URLs and the first
// region's as a fallback, and an agent homed in the first region the
// reverse.
func TestAttach_GivesTheHomeRegionsURLsFirstAndTheOthersAsFallbacks(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	west := credentials.New(credentials.Config{
		Conn: p.Conn(), Region: "west", NATSURL: "nats://west-1.example:4222,nats://west-2.example:4222",
		NATSWebSocketURL: "wss://west.example/nats", HeartbeatTimeout: 3 * time.Second, Lease: 2 * time.Second,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := west.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { west.Stop(time.Second) })
	local := p.Region()
	// Stored by the time the service answers: a runtime paired as soon as
	// the region is up is told its home region's address.
	if n := p.KeyCount(t, bus.BucketRegions); n != 2 {
		t.Fatalf("%d region records stored once west's service started, want 2", n)
	}

	var homedWest mesh.Agent
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Owner: true,
		JSON: map[string]any{"name": "homed-west", "home_region": "west"}}).Expect(t, http.StatusCreated).Decode(t, &homedWest)
	homedLocal := p.CreateAgent("homed-local")

	// Either region's pairing may answer, so each is asked a few times.
	for range 4 {
		var a meshapi.AttachResponse
		attach(t, p, map[string]any{"pairing_token": issue(t, p, homedWest.ID, 0).PairingToken}).Expect(t, http.StatusOK).Decode(t, &a)
		want := meshapi.NATSRegion{Region: local, URL: p.NATSURL()}
		if a.NATS.Region != "west" || a.NATS.URL != "nats://west-1.example:4222,nats://west-2.example:4222" ||
			a.NATS.WSURL != "wss://west.example/nats" || len(a.NATS.Fallbacks) != 1 || a.NATS.Fallbacks[0] != want {
			t.Fatalf("a west agent's runtime was told %+v; want west's URLs, then %+v", a.NATS, want)
		}
		attach(t, p, map[string]any{"pairing_token": issue(t, p, homedLocal.ID, 0).PairingToken}).Expect(t, http.StatusOK).Decode(t, &a)
		want = meshapi.NATSRegion{Region: "west", URL: "nats://west-1.example:4222,nats://west-2.example:4222", WSURL: "wss://west.example/nats"}
		if a.NATS.Region != local || a.NATS.URL != p.NATSURL() || len(a.NATS.Fallbacks) != 1 || a.NATS.Fallbacks[0] != want {
			t.Fatalf("a %s agent's runtime was told %+v; want %s's URL, then %+v", local, a.NATS, local, want)
		}
	}
}

// TestConnection_TellsAnActiveRuntimeItsHomeRegionOnly: a runtime asking
// where to connect now is told its agent's home region first, as at
// pairing; a home region this region knows no addresses of is not guessed
// (the runtime would move to the region that answered), and a revoked
// runtime is refused.
func TestConnection_TellsAnActiveRuntimeItsHomeRegionOnly(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	west := credentials.New(credentials.Config{
		Conn: p.Conn(), Region: "west", NATSURL: "nats://west.example:4222",
		HeartbeatTimeout: 3 * time.Second, Lease: 2 * time.Second,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := west.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { west.Stop(time.Second) })
	// West's task queue, which is asked whether the agent has open runs
	// before it moves away from west.
	westRuns := taskqueue.New(taskqueue.Config{Conn: p.Conn(), Region: "west"})
	if err := westRuns.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { westRuns.Stop(time.Second) })
	client := meshapi.NewClient(p.Conn().NC)

	var agent mesh.Agent
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Owner: true,
		JSON: map[string]any{"name": "moving", "home_region": "west"}}).Expect(t, http.StatusCreated).Decode(t, &agent)
	rt := p.Attach(agent.ID)
	nc, err := client.Runtime(agent.ID, rt.RuntimeID).Connection(ctx)
	if err != nil || nc.Region != "west" || nc.URL != "nats://west.example:4222" || nc.InboxPrefix != rt.NATS.InboxPrefix {
		t.Fatalf("connection of a west agent's runtime: %+v, %v; want west's address and its inbox", nc, err)
	}

	p.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + agent.ID, Owner: true,
		JSON: map[string]any{"home_region": "north"}}).Expect(t, http.StatusOK)
	var me *mesh.Error
	meshtest.Eventually(t, 10*time.Second, func() bool {
		_, err = client.Runtime(agent.ID, rt.RuntimeID).Connection(ctx)
		return errors.As(err, &me) && me.Code == mesh.CodeUnavailable
	}, func() string {
		return fmt.Sprintf("connection with a home region of no known address: %v, want UNAVAILABLE", err)
	})

	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + rt.RuntimeID + "/revoke", Owner: true}).Expect(t, http.StatusOK)
	if _, err := client.Runtime(agent.ID, rt.RuntimeID).Connection(ctx); !errors.As(err, &me) || me.Code != mesh.CodeUnauthorized {
		t.Fatalf("connection of a revoked runtime: %v, want UNAUTHORIZED", err)
	}
}
