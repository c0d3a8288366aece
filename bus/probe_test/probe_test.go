package probe

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/nats-io/nats.go/jetstream"
)

func TestProbe(t *testing.T) {
	dir := t.TempDir()
	s, err := bus.StartServer(bus.ServerConfig{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	c, err := bus.Connect(context.Background(), bus.ConnConfig{Server: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t0 := time.Now()
	if err := bus.Provision(ctx, c.JS, bus.ProvisionConfig{}); err != nil {
		t.Fatal(err)
	}
	fmt.Println("provision", time.Since(t0))
	kv, _ := c.JS.KeyValue(ctx, bus.BucketRuns)
	n := 5000
	val := make([]byte, 600)
	t0 = time.Now()
	for i := 0; i < n; i++ {
		kv.Put(ctx, fmt.Sprintf("k%d", i), val)
	}
	fmt.Println("kv put", time.Since(t0)/time.Duration(n))
	t0 = time.Now()
	for i := 0; i < n; i++ {
		kv.Get(ctx, fmt.Sprintf("k%d", i))
	}
	fmt.Println("kv get", time.Since(t0)/time.Duration(n))
	t0 = time.Now()
	for i := 0; i < n; i++ {
		c.JS.Publish(ctx, fmt.Sprintf("mesh.queue.a.%d", i), val)
	}
	fmt.Println("js publish", time.Since(t0)/time.Duration(n))
	cons, err := c.JS.CreateOrUpdateConsumer(ctx, bus.QueueStream, jetstream.ConsumerConfig{Durable: "agent_a", FilterSubject: "mesh.queue.a.>", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	for i := 0; i < n; i++ {
		b, err := cons.Fetch(1)
		if err != nil {
			t.Fatal(err)
		}
		for m := range b.Messages() {
			m.DoubleAck(ctx)
		}
	}
	fmt.Println("fetch+ack", time.Since(t0)/time.Duration(n))
}
