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
