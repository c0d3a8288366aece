package platform_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestRegions_ARecordWrittenAMomentAgoElsewhereIsFound: a region's mirror
// of a global bucket is behind its origin by the gateway's delay, yet a
// record written in the origin a moment ago (a runtime paired there,
// connecting here at once) is found in the other region: the direct get a
// mirror cannot answer is answered by the origin, across the gateway.
func TestRegions_ARecordWrittenAMomentAgoElsewhereIsFound(t *testing.T) {
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: []clustertest.Region{{Name: "east"}, {Name: "west"}}})
	serveIn(t, sc, "east", "agents", "")
	serveIn(t, sc, "west", "agents", "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, ejs := sc.Connect("east", 0)
	_, wjs := sc.Connect("west", 0)
	inEast, err := bus.OpenRecords[mesh.Agent](ctx, ejs, bus.BucketAgents)
	if err != nil {
		t.Fatal(err)
	}
	inWest, err := bus.OpenRecords[mesh.Agent](ctx, wjs, bus.BucketAgents)
	if err != nil {
		t.Fatal(err)
	}
	sc.SetDelay("east", "west", 500*time.Millisecond)
	id := mesh.NewID()
	if _, err := inEast.Create(ctx, id, &mesh.Agent{ID: id, Name: "fresh", HomeRegion: "east"}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	got, _, err := inWest.Get(ctx, id)
	t.Logf("the read in west took %s with %s added on each gateway crossing", time.Since(began), 500*time.Millisecond)
	if err != nil || got.Name != "fresh" {
		t.Fatalf("read in west right after the write in east: %+v, %v", got, err)
	}
	if _, _, err := inWest.Get(ctx, mesh.NewID()); !errors.Is(err, mesh.ErrNotFound) {
		t.Fatalf("an unknown key read in west: %v, want NOT_FOUND", err)
	}
}
