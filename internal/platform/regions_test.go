package platform_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// regions is the topology of the regions tests: east holds three servers
// (and most of JetStream's meta group), west and south one each.
var regions = []clustertest.Region{{Name: "east", Nodes: 3}, {Name: "west"}, {Name: "south"}}

// serveIn starts one service the way `a2a-platform serve` does, against
// the servers of one region, with the replicas that region can hold.
func serveIn(t *testing.T, sc *clustertest.Supercluster, region, service, ownerToken string) *platform.Running {
	t.Helper()
	cfg := platform.ServeConfig{
		Config: platform.Config{
			DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", Replicas: sc.Nodes(region),
			ShutdownGrace: time.Second, Logger: zerolog.Nop(),
		},
		Service: service, NATSURL: sc.URLs(region),
		NATSUser: clustertest.ServiceUser, NATSPassword: sc.Password(),
		OwnerToken: ownerToken,
	}
	if service == "credentials" {
		seed := filepath.Join(t.TempDir(), "issuer.nk")
		if err := os.WriteFile(seed, []byte(sc.IssuerSeed()), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg.AuthIssuerSeedFile = seed
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := platform.Serve(ctx, cfg)
	if err != nil {
		t.Fatalf("serve %s in %s: %v", service, region, err)
	}
	t.Cleanup(r.Stop)
	if r.Region() != region {
		t.Fatalf("%s in %s serves region %q", service, region, r.Region())
	}
	return r
}

// placedIn is the region (cluster) a stream lives in.
func placedIn(t *testing.T, js jetstream.JetStream, stream string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	if c := s.CachedInfo().Cluster; c != nil {
		return c.Name
	}
	return ""
}

// TestRegions_GlobalRecordsAreKeptOnceAndReadInEveryRegion: the region
// whose services provision first is the origin; every region keeps the
// global records it owns and an aggregate of every region's, placed there.
// A region reads them from its aggregate without crossing a gateway, and
// goes on reading them while the origin is down; it changes its own
// records meanwhile, while a change of a record the origin owns fails with
// 503 UNAVAILABLE instead of hanging; once the origin is back, those work
// again and reach every region.
func TestRegions_GlobalRecordsAreKeptOnceAndReadInEveryRegion(t *testing.T) {
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: regions})
	owner := secret.NewToken(secret.PrefixOwner)
	serveIn(t, sc, "east", "agents", "")
	east := meshtest.Remote(t, "http://"+serveIn(t, sc, "east", "gateway", owner).HTTPAddr(), owner)
	serveIn(t, sc, "west", "agents", "")
	west := meshtest.Remote(t, "http://"+serveIn(t, sc, "west", "gateway", "").HTTPAddr(), owner)
	serveIn(t, sc, "south", "agents", "")

	_, js := sc.Connect("west", 0)
	for _, global := range []string{bus.BucketAgents, bus.BucketConfig, bus.BucketCredentials} {
		if got := placedIn(t, js, "KV_"+global); got != "east" {
			t.Fatalf("global bucket %s lives in %q, want east (where the platform started)", global, got)
		}
		for _, r := range []string{"west", "south"} {
			if got := placedIn(t, js, "KV_"+bus.RegionBucket(global, r)); got != r {
				t.Fatalf("%s's copy of %s lives in %q", r, global, got)
			}
			if global != bus.BucketConfig {
				if got := placedIn(t, js, "KV_"+bus.OwnerBucket(global, r)); got != r {
					t.Fatalf("the records of %s that %s owns live in %q", global, r, got)
				}
			}
		}
		if _, err := js.Stream(context.Background(), "KV_"+bus.RegionBucket(global, "east")); err == nil {
			t.Fatalf("the origin region has a mirror of its own bucket %s", global)
		}
	}
	if got := placedIn(t, js, "KV_"+bus.BucketRuns); got != "east" {
		t.Fatalf("the runs bucket lives in %q, want east", got)
	}

	// Starting another service in a provisioned region creates, updates
	// and lists no stream: its provisioning needs no meta leader (the
	// watches it starts do create their consumers).
	watcher, _ := sc.Connect("west", 0)
	meta := clustertest.WatchMetaRequests(t, watcher)
	serveIn(t, sc, "west", "registry", "")
	for _, asked := range meta.Take(t) {
		if strings.HasPrefix(asked, "$JS.API.STREAM.") {
			t.Fatalf("a service started in a provisioned region asked the meta leader %s", asked)
		}
	}

	var agent, easterner mesh.Agent
	west.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Owner: true, JSON: map[string]any{"name": "westerner", "home_region": "west"}}).
		Expect(t, http.StatusCreated).Decode(t, &agent)
	east.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts/" + agent.ID, Owner: true}).Expect(t, http.StatusOK)
	east.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Owner: true, JSON: map[string]any{"name": "easterner", "home_region": "east"}}).
		Expect(t, http.StatusCreated).Decode(t, &easterner)

	// Reads of a global record in west are answered in west.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, wjs := sc.Connect("west", 0)
	agents, err := bus.OpenRecords[mesh.Agent](ctx, wjs, bus.BucketAgents)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "west's copy to hold the agents", func() bool {
		return holds(t, wjs, bus.RegionBucket(bus.BucketAgents, "west"), agent.ID, easterner.ID)
	})
	// The reads' answers come from west's copy: 200 reads from east would
	// be at least 400 messages over the gateways, which otherwise carry
	// only JetStream's own chatter (a few dozen messages a second).
	const reads = 200
	before := gatewayMsgs(sc, "west")
	began := time.Now()
	for range reads {
		got, _, err := agents.Get(ctx, agent.ID)
		if err != nil || got.HomeRegion != "west" {
			t.Fatalf("read in west: %+v, %v", got, err)
		}
	}
	if crossed := gatewayMsgs(sc, "west") - before; crossed > reads/2 {
		t.Fatalf("%d reads of a global record in west (%s) went with %d messages over the gateways", reads, time.Since(began), crossed)
	}

	sc.Stop("east")
	west.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts/" + agent.ID, Owner: true}).Expect(t, http.StatusOK)
	if got, _, err := agents.Get(ctx, agent.ID); err != nil || got.ID != agent.ID {
		t.Fatalf("read in west with east down: %+v, %v", got, err)
	}
	west.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + agent.ID, Owner: true, JSON: map[string]any{"description": "edited with east down"}}).
		Expect(t, http.StatusOK)
	began = time.Now()
	refused := west.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + easterner.ID, Owner: true, JSON: map[string]any{"description": "edited"}})
	refused.ExpectError(t, http.StatusServiceUnavailable, mesh.CodeUnavailable)
	if !strings.Contains(string(refused.Body), "region east") {
		t.Fatalf("a change of east's record with east down is refused without naming east: %s", refused.Body)
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Fatalf("a change of east's record with east down took %s to fail", took)
	}

	sc.Start("east")
	sc.WaitJetStream()
	waitFor(t, 60*time.Second, "a change of east's record through west once east is back", func() bool {
		res := west.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + easterner.ID, Owner: true, JSON: map[string]any{"description": "edited"}})
		return res.Status == http.StatusOK
	})
	waitFor(t, 30*time.Second, "west's copy to hold the edit", func() bool {
		got, _, err := agents.Get(ctx, easterner.ID)
		return err == nil && got.Description == "edited"
	})
	// West's services watched their mirror through the outage: an edit made
	// in east now reaches the view the west agents service answers from.
	east.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + agent.ID, Owner: true, JSON: map[string]any{"description": "edited in east"}}).
		Expect(t, http.StatusOK)
	waitFor(t, 30*time.Second, "west's agents service to see the edit made in east", func() bool {
		var got mesh.Agent
		west.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts/" + agent.ID, Owner: true}).Expect(t, http.StatusOK).Decode(t, &got)
		return got.Description == "edited in east"
	})
}

// holds reports whether bucket holds every key.
func holds(t *testing.T, js jetstream.JetStream, bucket string, keys ...string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return false
	}
	for _, key := range keys {
		if _, err := kv.Get(ctx, key); err != nil {
			return false
		}
	}
	return true
}

// gatewayMsgs counts the messages region's servers exchanged with every
// other region over gateways, in every account.
func gatewayMsgs(sc *clustertest.Supercluster, region string) int64 {
	var n int64
	for _, t := range sc.GatewayTraffic(region) {
		n += t.Msgs()
	}
	return n
}

// waitFor polls ok until it holds or limit passes.
func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %s", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
