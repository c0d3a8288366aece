package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/bus/embedded"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
)

// TestProvision_AsksTheMetaLeaderOnlyForWhatIsMissingOrDrifted: provisioning
// a complete deployment again creates and updates nothing (so a process
// starts while a supercluster's meta group has no quorum), and readiness
// lists no streams; a setting that changed updates just the streams it
// concerns.
func TestProvision_AsksTheMetaLeaderOnlyForWhatIsMissingOrDrifted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	conn, err := bus.Connect(ctx, bus.ConnConfig{Server: srv})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.NC.Close()
	watcher, err := nats.Connect("", nats.InProcessServer(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	meta := clustertest.WatchMetaRequests(t, watcher)
	if err := bus.Provision(ctx, conn.JS, bus.ProvisionConfig{}); err != nil {
		t.Fatal(err)
	}
	if created := meta.Take(t); len(created) != len(bus.ProvisionedStreams()) {
		t.Fatalf("the first provisioning made %d requests of the meta leader, want one create per stream (%d): %v", len(created), len(bus.ProvisionedStreams()), created)
	}
	if err := bus.Provision(ctx, conn.JS, bus.ProvisionConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := bus.Provisioned(ctx, conn.JS); err != nil {
		t.Fatal(err)
	}
	if again := meta.Take(t); len(again) != 0 {
		t.Fatalf("provisioning a complete deployment again asked the meta leader: %v", again)
	}
	if err := bus.Provision(ctx, conn.JS, bus.ProvisionConfig{EventRetention: time.Hour}); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"$JS.API.STREAM.UPDATE." + bus.EventStream: true, "$JS.API.STREAM.UPDATE.KV_" + bus.BucketDeliveries: true}
	updated := meta.Take(t)
	if len(updated) != len(want) {
		t.Fatalf("a new event retention made %v, want updates of %v", updated, want)
	}
	for _, subj := range updated {
		if !want[subj] {
			t.Fatalf("a new event retention made %v, want updates of %v", updated, want)
		}
	}
	info, err := conn.JS.Stream(ctx, bus.EventStream)
	if err != nil {
		t.Fatal(err)
	}
	if info.CachedInfo().Config.MaxAge != time.Hour {
		t.Fatalf("event retention after the update: %s", info.CachedInfo().Config.MaxAge)
	}
}
