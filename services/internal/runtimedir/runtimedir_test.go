package runtimedir

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/rs/zerolog"
)

// TestOnlinePresences_CopiesOnlyThoseTheCallerKeeps: the registry's sweep
// runs every second over every connected runtime; the view copies only the
// online presences the sweep acts on (those past their timeout), so a
// sweep that finds none allocates nothing however many runtimes are
// connected (it copied all 10,000 of them, some 3.5 MB a second, before).
func TestOnlinePresences_CopiesOnlyThoseTheCallerKeeps(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1})
	conn := clustertest.ProvisionedBus(t, c.URL(0), "runtimedir test", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	presence, err := bus.OpenRecords[mesh.RuntimePresence](ctx, conn.JS, bus.BucketPresence)
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	var ids []string
	for i := range n {
		id := mesh.NewID()
		status := mesh.PresenceOnline
		if i%5 == 0 {
			status = mesh.PresenceOffline
		}
		if _, err := presence.Create(ctx, id, &mesh.RuntimePresence{RuntimeID: id, AgentID: mesh.NewID(), Status: status, HeartbeatTimeoutMS: int64(i)}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	d, err := Open(ctx, conn.JS, Options{Presence: true, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)

	if got, want := d.OnlineCount(), n-n/5; got != want {
		t.Fatalf("%d presences counted online, want %d", got, want)
	}
	// Offline ones are never offered, whatever the filter says.
	picked := d.OnlinePresences(func(p *mesh.RuntimePresence) bool {
		return p.HeartbeatTimeoutMS%10 == 0 || p.HeartbeatTimeoutMS%10 == 3
	})
	var got []string
	for _, p := range picked {
		got = append(got, p.RuntimeID)
	}
	var want []string
	for i, id := range ids {
		if i%10 == 3 {
			want = append(want, id)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("picked %d presences, want the %d online ones the filter keeps", len(got), len(want))
	}

	none := func(*mesh.RuntimePresence) bool { return false }
	if allocs := testing.AllocsPerRun(20, func() { d.OnlinePresences(none) }); allocs != 0 {
		t.Fatalf("a sweep that acts on no runtime made %v allocations over %d presences, want none", allocs, n)
	}
	if allocs := testing.AllocsPerRun(20, func() { _ = d.OnlineCount() }); allocs != 0 {
		t.Fatalf("counting the online presences made %v allocations, want none", allocs)
	}
}
