package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// homed is the part of an agent record the upgrade reads.
type homed struct {
	Name       string `json:"name"`
	HomeRegion string `json:"home_region"`
}

// TestUpgrade_GivesTheGlobalRecordsOfAnEarlierLayoutTheirOwners: a
// deployment of east (the origin) and west whose global records are kept
// as the earlier version kept them (in east, mirrored to west) refuses to
// start until upgraded; the upgrade gives each record an owner (an agent
// its home region, any other record the origin), after which every record
// is read in both regions and changed in either, west's agent while east
// is down. A second upgrade changes nothing.
func TestUpgrade_GivesTheGlobalRecordsOfAnEarlierLayoutTheirOwners(t *testing.T) {
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conns := map[string]*bus.Conn{}
	for _, r := range []string{"east", "west"} {
		conn, err := bus.Connect(ctx, bus.ConnConfig{URL: sc.URLs(r), User: clustertest.ServiceUser, Password: sc.Password(), Name: "upgrade test " + r})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.NC.Close() })
		conns[r] = conn
	}
	east, west := conns["east"].JS, conns["west"].JS
	earlier := sc.EarlierLayout(t, "east")
	agents, err := earlier.KeyValue(ctx, bus.BucketAgents)
	if err != nil {
		t.Fatal(err)
	}
	for id, home := range map[string]string{"agent-west": "west", "agent-east": "east"} {
		if _, err := agents.Put(ctx, id, []byte(`{"name":"`+id+`","home_region":"`+home+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := earlier.KeyValue(ctx, bus.BucketA2AKeys)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Put(ctx, "key-1", []byte(`{"name":"a key"}`)); err != nil {
		t.Fatal(err)
	}

	if err := bus.Provision(ctx, west, bus.ProvisionConfig{Origin: "east"}); !errors.Is(err, bus.ErrEarlierLayout) {
		t.Fatalf("provisioning on the earlier layout: %v; want it refused, naming the upgrade", err)
	}
	did, err := bus.Upgrade(ctx, west)
	if err != nil {
		t.Fatalf("upgrade: %v (did %q)", err, did)
	}
	t.Logf("the upgrade did:\n%s", strings.Join(did, "\n"))
	for _, want := range []string{"mesh_agents: copied 1 records to region west", "mesh_agents: copied 1 records to region east", "mesh_a2a_keys: copied 1 records to region east", "marked"} {
		if !strings.Contains(strings.Join(did, "\n"), want) {
			t.Fatalf("the upgrade did %q; want a step saying %q", did, want)
		}
	}
	for _, r := range []string{"east", "west"} {
		if err := bus.Provision(ctx, conns[r].JS, bus.ProvisionConfig{Origin: "east"}); err != nil {
			t.Fatalf("provision %s once upgraded: %v", r, err)
		}
	}
	recs := map[string]*bus.Records[homed]{}
	for r, conn := range conns {
		if recs[r], err = bus.OpenRecords[homed](ctx, conn.JS, bus.BucketAgents); err != nil {
			t.Fatal(err)
		}
	}
	seen := func(region, key, name string) {
		t.Helper()
		var got *homed
		meshtest.Eventually(t, 90*time.Second, func() bool {
			got, _, err = recs[region].Get(ctx, key)
			return err == nil && got.Name == name
		}, func() string { return fmt.Sprintf("%s reads %s as %+v, %v; want %q", region, key, got, err, name) })
	}
	for _, r := range []string{"east", "west"} {
		seen(r, "agent-west", "agent-west")
		seen(r, "agent-east", "agent-east")
	}
	// East's agent is changed in west (by east), and west's in east.
	if _, _, err := recs["west"].Modify(ctx, "agent-east", func(a *homed) error { a.Name = "changed in west"; return nil }); err != nil {
		t.Fatalf("change of east's agent in west: %v", err)
	}
	if _, _, err := recs["east"].Modify(ctx, "agent-west", func(a *homed) error { a.Name = "changed in east"; return nil }); err != nil {
		t.Fatalf("change of west's agent in east: %v", err)
	}
	seen("east", "agent-east", "changed in west")
	seen("west", "agent-west", "changed in east")
	// West owns its agent: changed there while east is down.
	sc.Stop("east")
	if _, _, err := recs["west"].Modify(ctx, "agent-west", func(a *homed) error { a.Name = "changed with east down"; return nil }); err != nil {
		t.Fatalf("change of west's agent in west with east down: %v", err)
	}
	sc.Start("east")
	sc.WaitJetStream()
	seen("east", "agent-west", "changed with east down")

	again, err := bus.Upgrade(ctx, east)
	if err != nil || len(again) > 0 {
		t.Fatalf("a second upgrade: did %q, %v; want nothing done", again, err)
	}
}
