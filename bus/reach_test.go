package bus_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestCallRegion_ARegionThatStopsAnsweringIsRefusedAtOnceUntilItAnswers:
// with the gateway links to east holding every message (east's servers up
// but out of reach), the first request west hands to east waits out its
// deadline and is refused 503 naming east; the next ones are refused at
// once, without being sent, and readiness names east; once the links carry
// messages again, the background probe forgets east and requests are
// answered there.
func TestCallRegion_ARegionThatStopsAnsweringIsRefusedAtOnceUntilItAnswers(t *testing.T) {
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func(region string) *bus.Conn {
		conn, err := bus.Connect(ctx, bus.ConnConfig{URL: sc.URLs(region), User: clustertest.ServiceUser, Password: sc.Password(), Name: "reach test " + region})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.NC.Close() })
		if err := bus.Provision(ctx, conn.JS, bus.ProvisionConfig{}); err != nil {
			t.Fatal(err)
		}
		return conn
	}
	east, west := connect("east"), connect("west")
	svc, err := bus.Serve(east.NC, bus.ServiceSpec{Name: "reachtest", Region: "east",
		Route:     func(context.Context, string, *bus.Request) (bus.Route, error) { return bus.Here, nil },
		Endpoints: []bus.Endpoint{{Name: "where", Handler: func(context.Context, *bus.Request) (any, error) { return "east", nil }}}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Stop(time.Second) }()
	if err := east.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	call := func(timeout time.Duration) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var where string
		err := bus.CallRegion(cctx, west.NC, "east", "reachtest", "where", bus.ServiceSubject("reachtest", "where"), []byte("{}"), &where)
		return where, err
	}
	var where string
	meshtest.Eventually(t, 30*time.Second, func() bool {
		where, err = call(2 * time.Second)
		return err == nil && where == "east"
	}, func() string { return "east never answered: " + mesh.AsError(err).Error() })

	sc.SetDelay("east", "west", time.Hour)
	var down *bus.RegionUnreachableError
	if _, err := call(2 * time.Second); !errors.As(err, &down) || down.Region != "east" || mesh.AsError(err).Code != mesh.CodeUnavailable {
		t.Fatalf("a request to east with its links holding every message: %v; want 503 UNAVAILABLE naming east", err)
	}
	for range 3 {
		// Not sent: sent, it would be answered TIMEOUT after the second.
		if _, err := call(time.Second); !errors.As(err, &down) || down.Region != "east" {
			t.Fatalf("the next request to east: %v; want it refused at once naming east", err)
		}
	}
	if got := bus.UnreachableRegions(west.NC); !slices.Equal(got, []string{"east"}) {
		t.Fatalf("regions west remembers unreachable: %v; want [east]", got)
	}
	if r := bus.CheckReady(ctx, west.JS); r.Err != nil || !slices.Equal(r.UnreachableRegions(), []string{"east"}) {
		t.Fatalf("readiness of west with east out of reach: %v, unreachable %v; want ready, naming east", r.Err, r.UnreachableRegions())
	}

	sc.SetDelay("east", "west", 0)
	meshtest.Eventually(t, 90*time.Second, func() bool {
		where, err = call(2 * time.Second)
		return err == nil && where == "east" && len(bus.UnreachableRegions(west.NC)) == 0
	}, func() string { return "east was never asked again once it answered: " + mesh.AsError(err).Error() })
}
