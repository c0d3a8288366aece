package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/internal/testkit/syncbuf"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// TestProvision_AConfiguredOriginHoldsTheGlobalRecordsWhicheverRegionStartsFirst:
// with the origin configured as east, west's provisioning, started first,
// waits for east rather than make the global records itself, and ends once
// east has made them there; a process told another origin is refused.
func TestProvision_AConfiguredOriginHoldsTheGlobalRecordsWhicheverRegionStartsFirst(t *testing.T) {
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func(region string) *bus.Conn {
		conn, err := bus.Connect(ctx, bus.ConnConfig{URL: sc.URLs(region), User: clustertest.ServiceUser, Password: sc.Password(), Name: "origin test " + region})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.NC.Close() })
		return conn
	}
	west, east := connect("west"), connect("east")
	var logs syncbuf.Buffer
	westDone := make(chan error, 1)
	go func() {
		westDone <- bus.Provision(ctx, west.JS, bus.ProvisionConfig{Origin: "east", Logger: zerolog.New(&logs)})
	}()
	meshtest.Eventually(t, 30*time.Second, func() bool { return strings.Contains(logs.String(), "waiting for region east") }, func() string {
		return "west's provisioning never said it waits for east: " + logs.String()
	})
	select {
	case err := <-westDone:
		t.Fatalf("west's provisioning ended before east provisioned: %v", err)
	default:
	}
	if err := bus.Provision(ctx, east.JS, bus.ProvisionConfig{Origin: "east"}); err != nil {
		t.Fatal(err)
	}
	if err := <-westDone; err != nil {
		t.Fatalf("west's provisioning once east has: %v", err)
	}
	info, err := west.JS.Stream(ctx, "KV_"+bus.BucketAgents)
	if err != nil {
		t.Fatal(err)
	}
	if c := info.CachedInfo().Cluster; c == nil || c.Name != "east" {
		t.Fatalf("the agents bucket is kept in %+v; want east", c)
	}
	if err := bus.Provision(ctx, connect("west").JS, bus.ProvisionConfig{Origin: "west"}); err == nil || !strings.Contains(err.Error(), "kept in region east") {
		t.Fatalf("provisioning west as the origin once east is: %v; want it refused", err)
	}
}

// TestProvision_AnotherRegionWaitsForEveryGlobalRecordOfTheOrigin: when
// every region starts at once, the origin may have made the agents bucket
// (which names it the origin) and not yet the rest. West's provisioning
// then waits for the origin's event log and global buckets instead of
// failing, or making a global bucket in west, where a west outage would
// take it from every region; it ends once east made them, all in east.
func TestProvision_AnotherRegionWaitsForEveryGlobalRecordOfTheOrigin(t *testing.T) {
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func(region string) *bus.Conn {
		conn, err := bus.Connect(ctx, bus.ConnConfig{URL: sc.URLs(region), User: clustertest.ServiceUser, Password: sc.Password(), Name: "origin test " + region})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.NC.Close() })
		return conn
	}
	west, east := connect("west"), connect("east")
	// East's provisioning has made the agents bucket, and nothing else yet.
	if _, err := east.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bus.BucketAgents, Placement: &jetstream.Placement{Cluster: "east"}}); err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	westDone := make(chan error, 1)
	go func() {
		westDone <- bus.Provision(ctx, west.JS, bus.ProvisionConfig{Origin: "east", Logger: zerolog.New(&logs)})
	}()
	meshtest.Eventually(t, 30*time.Second, func() bool { return strings.Contains(logs.String(), "waiting for region east") }, func() string {
		return "west's provisioning never said it waits for east: " + logs.String()
	})
	select {
	case err := <-westDone:
		t.Fatalf("west's provisioning ended before east made its event log and global buckets: %v", err)
	default:
	}
	if _, err := west.JS.Stream(ctx, "KV_"+bus.BucketConfig); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the global bucket %s, before east made it: %v; want it missing, not made by west", bus.BucketConfig, err)
	}
	if err := bus.Provision(ctx, east.JS, bus.ProvisionConfig{Origin: "east"}); err != nil {
		t.Fatal(err)
	}
	if err := <-westDone; err != nil {
		t.Fatalf("west's provisioning once east has: %v", err)
	}
	for _, name := range []string{bus.EventStream, "KV_" + bus.BucketConfig, "KV_" + bus.BucketA2AKeys, "KV_" + bus.BucketConsumers, "KV_" + bus.BucketWebhooks} {
		s, err := west.JS.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if c := s.CachedInfo().Cluster; c == nil || c.Name != "east" {
			t.Fatalf("stream %s is kept in %+v; want east", name, c)
		}
	}
}

// TestReadersEventStream_TheHomeRegionsOrTheGatheredLog: a durable reader
// of one agent's events reads its home region's event stream (the origin's
// is the gathered log), and the gathered log for an agent homed in a region
// that keeps no event stream.
func TestReadersEventStream_TheHomeRegionsOrTheGatheredLog(t *testing.T) {
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var west *bus.Conn
	for _, region := range []string{"east", "west"} {
		conn, err := bus.Connect(ctx, bus.ConnConfig{URL: sc.URLs(region), User: clustertest.ServiceUser, Password: sc.Password(), Name: "readers test " + region})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.NC.Close() })
		if err := bus.Provision(ctx, conn.JS, bus.ProvisionConfig{Origin: "east"}); err != nil {
			t.Fatal(err)
		}
		west = conn
	}
	for home, want := range map[string]string{"west": bus.RegionEventStream("west"), "east": bus.EventStream, "north": bus.EventStream} {
		if got, err := bus.ReadersEventStream(ctx, west.JS, home); err != nil || got != want {
			t.Errorf("the event stream of an agent homed in %s: %q, %v; want %q", home, got, err, want)
		}
	}
}
