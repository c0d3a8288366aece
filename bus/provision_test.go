package bus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/internal/testkit/syncbuf"
	"github.com/rs/zerolog"
)

// TestProvision_WaitsForJetStreamOnAClusterStillForming: services started
// before their cluster has a quorum say once that they wait, and every one
// of them provisions as soon as the other nodes come up.
func TestProvision_WaitsForJetStreamOnAClusterStillForming(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, Deferred: true})
	c.Start(0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const services = 3
	logs := make([]*syncbuf.Buffer, services)
	errs := make(chan error, services)
	for i := range services {
		logs[i] = &syncbuf.Buffer{}
		_, js := c.Connect(0)
		go func() {
			errs <- bus.Provision(ctx, js, bus.ProvisionConfig{Replicas: 3, Logger: zerolog.New(logs[i])})
		}()
	}
	deadline := time.Now().Add(20 * time.Second)
	for i := range services {
		for !strings.Contains(logs[i].String(), "waiting for JetStream") {
			select {
			case err := <-errs:
				t.Fatalf("provisioning ended before the cluster had a quorum: %v", err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("service %d never said it was waiting for JetStream; log: %s", i, logs[i].String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if n := strings.Count(logs[i].String(), "waiting for JetStream"); n != 1 {
			t.Errorf("service %d said it was waiting %d times", i, n)
		}
	}
	c.Start(1)
	c.Start(2)
	for range services {
		if err := <-errs; err != nil {
			t.Fatalf("provisioning after the cluster formed: %v", err)
		}
	}
	_, js := c.Connect(1)
	if err := bus.Provisioned(ctx, js); err != nil {
		t.Fatal(err)
	}
}
