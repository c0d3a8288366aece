package homes

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/rs/zerolog"
)

// TestDirectory: an agent's home is told from the view, from the store for
// an agent the view has not seen, and the regions with agents follow agents
// as they come, move and go.
func TestDirectory(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1})
	conn := clustertest.ProvisionedBus(t, c.URL(0), "homes test", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	agents, err := bus.OpenRecords[mesh.Agent](ctx, conn.JS, bus.BucketAgents)
	if err != nil {
		t.Fatal(err)
	}
	put := func(home string) string {
		id := mesh.NewID()
		if _, err := agents.Create(ctx, id, &mesh.Agent{ID: id, Name: "a", HomeRegion: home}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	west := put("west")
	d, err := Open(ctx, conn.JS, "east", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)

	if home, err := d.Of(ctx, west); err != nil || home != "west" {
		t.Fatalf("home of a west agent: %q, %v", home, err)
	}
	if got := d.Route(ctx, west); got.Region != "west" {
		t.Fatalf("route of a west agent: %+v", got)
	}
	if got := d.Others(); !slices.Equal(got, []string{"west"}) {
		t.Fatalf("other regions: %v, want [west]", got)
	}
	if _, err := d.Of(ctx, mesh.NewID()); !errors.Is(err, mesh.ErrNotFound) {
		t.Fatalf("home of an unknown agent: %v, want NOT_FOUND", err)
	}
	if got := d.Route(ctx, "not an id"); got.Region != "" || len(got.Ask) != 0 {
		t.Fatalf("route of a bad id: %+v, want here", got)
	}
	if got := d.RouteAgent(ctx, []byte(`{"agent_id":"`+west+`"}`)); got.Region != "west" {
		t.Fatalf("route of a body naming a west agent: %+v", got)
	}
	if got := d.RouteAgent(ctx, []byte(`{}`)); got.Region != "" || len(got.Ask) != 0 {
		t.Fatalf("route of a body naming no agent: %+v, want here", got)
	}
	if _, ok := d.RouteRuntime(ctx, &bus.Request{Subject: "mesh.svc.taskqueue.list"}); ok {
		t.Fatal("a service request was routed as a runtime's")
	}
	runtimeReq := &bus.Request{Subject: bus.RuntimeSubject(west, mesh.NewID(), bus.RuntimeOpHeartbeat)}
	if got, ok := d.RouteRuntime(ctx, runtimeReq); !ok || got.Region != "west" {
		t.Fatalf("route of a west agent's runtime request: %+v, %v", got, ok)
	}
	routes := d.Routes(func(context.Context, string, *bus.Request) bus.Route { return bus.Route{Region: "by op"} })
	if got, err := routes(ctx, "list", runtimeReq); err != nil || got.Region != "west" {
		t.Fatalf("Routes of a west agent's runtime request: %+v, %v", got, err)
	}
	if got, err := routes(ctx, "list", &bus.Request{Subject: "mesh.svc.taskqueue.list"}); err != nil || got.Region != "by op" {
		t.Fatalf("Routes of a service request: %+v, %v, want the op's route", got, err)
	}

	// An agent stored a moment ago is found in the store before the view
	// has it; the regions follow its arrival.
	south := put("south")
	if home, err := d.Of(ctx, south); err != nil || home != "south" {
		t.Fatalf("home of a new south agent: %q, %v", home, err)
	}
	eventually(t, func() bool { return slices.Equal(d.Others(), []string{"south", "west"}) },
		func() string { return "other regions never became [south west]: " + strings.Join(d.Others(), " ") })
	if home, ok := d.Cached(south); !ok || home != "south" {
		t.Fatalf("the view's home of the south agent: %q, %v", home, ok)
	}

	// The west agent moves here, and the south agent goes: no other region
	// keeps anything.
	if _, _, err := agents.Modify(ctx, west, func(a *mesh.Agent) error { a.HomeRegion = "east"; return nil }); err != nil {
		t.Fatal(err)
	}
	_, rev, err := agents.Get(ctx, south)
	if err != nil {
		t.Fatal(err)
	}
	if err := agents.Delete(ctx, south, rev); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool { return len(d.Others()) == 0 },
		func() string { return "other regions after the move and the delete: " + strings.Join(d.Others(), " ") })
	if got := d.Ask(); len(got.Ask) != 0 {
		t.Fatalf("ask with no other region: %+v", got)
	}

	// A region that runs services but homes no agent may keep what was
	// started there (a conversation): it is one of the others too.
	regions, err := bus.OpenRecords[map[string]string](ctx, conn.JS, bus.BucketRegions)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := regions.Put(ctx, "north", &map[string]string{"region": "north"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool { return slices.Equal(d.Others(), []string{"north"}) },
		func() string { return "other regions with north serving: " + strings.Join(d.Others(), " ") })
}

// eventually polls cond until it holds, failing the test with what()
// after 10 seconds.
func eventually(t *testing.T, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
