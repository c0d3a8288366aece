package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkRecords_OwnedAgainstPlain creates a record and reads it back in
// the origin of two regions: in a global bucket owned per region (what a
// deployment on a cluster does) and in a plain bucket on the same server
// (what a global bucket was, and still is on a server in no cluster).
func BenchmarkRecords_OwnedAgainstPlain(b *testing.B) {
	sc := clustertest.StartSupercluster(b, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conns := sc.ProvisionedRegions(b, "east", "east", "west")
	js := conns["east"].JS
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "bench_plain", Placement: &jetstream.Placement{Cluster: "east"}}); err != nil {
		b.Fatal(err)
	}
	for _, bucket := range []string{"bench_plain", bus.BucketAgents} {
		recs, err := bus.OpenRecords[note](ctx, js, bucket)
		if err != nil {
			b.Fatal(err)
		}
		i := 0
		b.Run(bucket, func(b *testing.B) {
			for b.Loop() {
				key := fmt.Sprintf("k%d", i)
				i++
				if _, err := recs.Create(ctx, key, &note{Text: "x"}); err != nil {
					b.Fatal(err)
				}
				if _, _, err := recs.Get(ctx, key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
