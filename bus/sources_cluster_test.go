package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/internal/testkit/syncbuf"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// TestTendSources_ARegionBackFromAnOutageCopiesWhatItMissedAndIsCopiedAtOnce:
// four regions, east the origin. North joins while south is down, so
// north's provisioning cannot make south's copies source north's records;
// south's processes, which stayed up through the outage, add those
// sources once south is back, and south then reads what north wrote. The
// sources of south's records in west's copies, unheard while south was
// down, are restarted once south answers, rather than left to the server's
// own retries; each region reads what the other wrote after the outage.
func TestTendSources_ARegionBackFromAnOutageCopiesWhatItMissedAndIsCopiedAtOnce(t *testing.T) {
	t.Parallel()
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}, {Name: "south"}, {Name: "north"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conns := map[string]*bus.Conn{}
	provision := func(region string) { conns[region] = sc.ProvisionedRegion(t, "east", region) }
	logs := map[string]*syncbuf.Buffer{}
	tend := func(region string) {
		logs[region] = &syncbuf.Buffer{}
		tending := bus.SourceTending(conns[region].JS, zerolog.New(logs[region]))
		tending.Start(context.Background())
		t.Cleanup(tending.Stop)
	}
	for _, r := range []string{"east", "west", "south"} {
		provision(r)
		tend(r)
	}

	sc.Stop("south")
	provision("north")
	sc.Start("south")
	sc.WaitJetStream()

	put := func(region, key string) {
		t.Helper()
		kv, err := conns[region].JS.KeyValue(ctx, bus.OwnerBucket(bus.BucketAgents, region))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, key, []byte(region)); err != nil {
			t.Fatalf("put %s in %s: %v", key, region, err)
		}
	}
	seenIn := func(region, key string) {
		t.Helper()
		agg := bus.RegionBucket(bus.BucketAgents, region)
		var err error
		meshtest.Eventually(t, 60*time.Second, func() bool {
			var s jetstream.Stream
			if s, err = conns[region].JS.Stream(ctx, "KV_"+agg); err == nil {
				_, err = s.GetLastMsgForSubject(ctx, "$KV."+agg+"."+key)
			}
			return err == nil
		}, func() string { return fmt.Sprintf("%s's copy of the agents does not hold %s: %v", region, key, err) })
	}
	put("north", "from-north")
	put("south", "from-south")
	seenIn("south", "from-north")
	seenIn("west", "from-south")
	if log := logs["west"].String(); !strings.Contains(log, `"source":"KV_`+bus.OwnerBucket(bus.BucketAgents, "south")+`"`) || !strings.Contains(log, "restarted a stalled source") {
		t.Fatalf("west's sources of south's records were not restarted once south answered; west's tending logged:\n%s", log)
	}
	if log := logs["south"].String(); strings.Contains(log, `"level":"warn"`) {
		t.Fatalf("south's tending warned:\n%s", log)
	}
}

// TestRecords_ReadsOfMissingKeysAskOtherRegionsABoundedNumberOfTimes: a
// read of a key a region has not heard of asks every other region (the
// record may have been created there a moment ago), and reads of missing
// keys are what wrong credentials cause: 300 of them at once in east ask
// west's records at most the connection's bound of searches, not 300
// times. A record west created is still found from east.
func TestRecords_ReadsOfMissingKeysAskOtherRegionsABoundedNumberOfTimes(t *testing.T) {
	t.Parallel()
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conns := sc.ProvisionedRegions(t, "east", "east", "west")
	west, err := bus.OpenRecords[note](ctx, conns["west"].JS, bus.BucketCredentials)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := west.Create(ctx, "made-in-west", &note{Text: "west"}); err != nil {
		t.Fatal(err)
	}
	east, err := bus.OpenRecords[note](ctx, conns["east"].JS, bus.BucketCredentials)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := east.Get(ctx, "made-in-west"); err != nil || got.Text != "west" {
		t.Fatalf("east reads west's record as %+v, %v", got, err)
	}

	watcher, _ := sc.Connect("west", 0)
	asked := make(chan *nats.Msg, 1024)
	if _, err := watcher.ChanSubscribe("$JS.API.STREAM.MSG.GET.KV_"+bus.OwnerBucket(bus.BucketCredentials, "west"), asked); err != nil {
		t.Fatal(err)
	}
	if err := watcher.Flush(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := east.Get(ctx, fmt.Sprintf("wrong-%d", i)); !errors.Is(err, mesh.ErrNotFound) {
				t.Errorf("read of a missing key: %v; want not found", err)
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	if err := watcher.Flush(); err != nil {
		t.Fatal(err)
	}
	bound := bus.SearchBurst + int(bus.SearchesPerSecond*took.Seconds()) + 1
	if n := len(asked); n > bound {
		t.Fatalf("300 reads of missing keys in %s asked west %d times; want at most %d", took, n, bound)
	}
}

// TestTendSources_ARegionWhoseSourcesFallSilentIsNamedUnreachable: a
// process of west that sent nothing to south names south unreachable once
// south's sources in west's copies are unheard and its streams do not
// answer, and forgets it once south is back.
func TestTendSources_ARegionWhoseSourcesFallSilentIsNamedUnreachable(t *testing.T) {
	t.Parallel()
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}, {Name: "south"}}})
	conns := sc.ProvisionedRegions(t, "east", "east", "west", "south")
	tending := bus.SourceTending(conns["west"].JS, zerolog.Nop())
	tending.Start(context.Background())
	t.Cleanup(tending.Stop)
	if got := bus.UnreachableRegions(conns["west"].NC); len(got) != 0 {
		t.Fatalf("with every region up, west names %v unreachable", got)
	}
	sc.Stop("south")
	meshtest.Eventually(t, 60*time.Second, func() bool {
		got := bus.UnreachableRegions(conns["west"].NC)
		return len(got) == 1 && got[0] == "south"
	}, func() string {
		return fmt.Sprintf("with south down, west names %v unreachable; want south", bus.UnreachableRegions(conns["west"].NC))
	})
	sc.Start("south")
	sc.WaitJetStream()
	meshtest.Eventually(t, 60*time.Second, func() bool { return len(bus.UnreachableRegions(conns["west"].NC)) == 0 },
		func() string {
			return fmt.Sprintf("with south back, west names %v unreachable", bus.UnreachableRegions(conns["west"].NC))
		})
}
