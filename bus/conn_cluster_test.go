package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/rs/zerolog"
)

// TestConnect_InOrderReconnectsToTheClustersOtherServers: a runtime told
// one server of its region (the address pairing gave) still reconnects to
// another server of that region when its server goes: the servers the
// cluster tells of are kept, after the ones given.
func TestConnect_InOrderReconnectsToTheClustersOtherServers(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.ConnConfig{URL: c.URL(0), InOrder: true, MaxReconnectWait: 100 * time.Millisecond, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.NC.Close()
	if got := conn.NC.ConnectedUrl(); got != c.URL(0) {
		t.Fatalf("connected to %s, want the server given first, %s", got, c.URL(0))
	}
	c.Stop(0)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if url := conn.NC.ConnectedUrl(); conn.NC.IsConnected() && url != "" && url != c.URL(0) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not reconnected to another server of the cluster after its server stopped (servers known: %v)", conn.NC.Servers())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
