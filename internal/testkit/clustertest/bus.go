package clustertest

import (
	"context"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
)

// ProvisionedBus connects to urls (comma-separated) as a platform service
// does, under name, and provisions every stream and bucket at replicas, as
// a2a-platform serve does before its service starts. The connection is
// closed when the test ends.
func ProvisionedBus(t testing.TB, urls, name string, replicas int) *bus.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.ConnConfig{URL: urls, Name: name})
	if err != nil {
		t.Fatalf("clustertest: connect: %v", err)
	}
	t.Cleanup(func() { conn.NC.Close() })
	if err := bus.Provision(ctx, conn.JS, bus.ProvisionConfig{Replicas: replicas}); err != nil {
		t.Fatalf("clustertest: provision: %v", err)
	}
	return conn
}

// ProvisionedRegions connects to each of regions as a platform service of
// that region does and provisions it, one region after the other, origin
// holding the global records (bus.ProvisionConfig.Origin). The
// connections are closed when the test ends.
func (sc *Supercluster) ProvisionedRegions(t testing.TB, origin string, regions ...string) map[string]*bus.Conn {
	t.Helper()
	conns := map[string]*bus.Conn{}
	for _, r := range regions {
		conns[r] = sc.ProvisionedRegion(t, origin, r)
	}
	return conns
}

// ProvisionedRegion is ProvisionedRegions for one region.
func (sc *Supercluster) ProvisionedRegion(t testing.TB, origin, region string) *bus.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.ConnConfig{URL: sc.URLs(region), User: ServiceUser, Password: sc.Password(), Name: "service of " + region})
	if err != nil {
		t.Fatalf("clustertest: connect to %s: %v", region, err)
	}
	t.Cleanup(func() { conn.NC.Close() })
	if err := bus.Provision(ctx, conn.JS, bus.ProvisionConfig{Origin: origin}); err != nil {
		t.Fatalf("clustertest: provision %s: %v", region, err)
	}
	return conn
}
