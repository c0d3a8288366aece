package credentials_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/credentials"
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
