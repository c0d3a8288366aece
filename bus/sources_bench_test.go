package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/rs/zerolog"
)

// BenchmarkTendSources_CopyAfterAnOutage: three one-server regions, east
// the origin; south is down for 90 s, then a record is written in its
// bucket. Reported: how long after south's return west's copy holds it
// (catch_up_s), with west's sources tended as every `serve` process tends
// them, and without. Each iteration is one outage (about two minutes):
// run it with -benchtime 1x.
func BenchmarkTendSources_CopyAfterAnOutage(b *testing.B) {
	for _, tended := range []bool{true, false} {
		b.Run(map[bool]string{true: "tended", false: "untended"}[tended], func(b *testing.B) {
			var total time.Duration
			for i := range b.N {
				total += copyAfterOutage(b, tended, fmt.Sprintf("record-%d", i))
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "catch_up_s")
		})
	}
}

func copyAfterOutage(b *testing.B, tended bool, key string) time.Duration {
	sc := clustertest.StartSupercluster(b, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}, {Name: "south"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conns := sc.ProvisionedRegions(b, "east", "east", "west", "south")
	if tended {
		tending := bus.SourceTending(conns["west"].JS, zerolog.Nop())
		tending.Start(context.Background())
		defer tending.Stop()
	}
	agg := bus.RegionBucket(bus.BucketAgents, "west")
	s, err := conns["west"].JS.Stream(ctx, "KV_"+agg)
	if err != nil {
		b.Fatal(err)
	}
	sc.Stop("south")
	<-time.After(90 * time.Second) // the outage's length, not a wait for an event
	sc.Start("south")
	sc.WaitJetStream()
	kv, err := conns["east"].JS.KeyValue(ctx, bus.OwnerBucket(bus.BucketAgents, "south"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := kv.Put(ctx, key, []byte("1")); err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	for ctx.Err() == nil {
		if _, err := s.GetLastMsgForSubject(ctx, "$KV."+agg+"."+key); err == nil {
			return time.Since(began)
		}
		<-time.After(20 * time.Millisecond)
	}
	b.Fatalf("west's copy never held %s", key)
	return 0
}
