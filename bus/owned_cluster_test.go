package bus_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestRecords_GlobalRecordsAreWrittenInAnyRegionThatIsUp: three regions,
// east the origin. A global record is created in the region where it is
// asked for and read in every region. With east down, west creates and
// changes records of its own and south reads them; a record east owns is
// read in west but not changed there: refused with 503 naming east, the
// next time at once. When east is back, it reads what west wrote meanwhile.
func TestRecords_GlobalRecordsAreWrittenInAnyRegionThatIsUp(t *testing.T) {
	regions := []string{"east", "west", "south"}
	var rs []clustertest.Region
	for _, r := range regions {
		rs = append(rs, clustertest.Region{Name: r})
	}
	sc := clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: rs})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conns := map[string]*bus.Conn{}
	var wg sync.WaitGroup
	errs := make(chan error, len(regions))
	for _, r := range regions {
		conn, err := bus.Connect(ctx, bus.ConnConfig{URL: sc.URLs(r), User: clustertest.ServiceUser, Password: sc.Password(), Name: "owned test " + r})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.NC.Close() })
		conns[r] = conn
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := bus.Provision(ctx, conn.JS, bus.ProvisionConfig{Origin: "east"}); err != nil {
				errs <- fmt.Errorf("provision %s: %w", r, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	recs := map[string]*bus.Records[note]{}
	for _, r := range regions {
		rec, err := bus.OpenRecords[note](ctx, conns[r].JS, bus.BucketAgents)
		if err != nil {
			t.Fatal(err)
		}
		recs[r] = rec
	}
	seenIn := func(region, key, text string) {
		t.Helper()
		var got *note
		var err error
		// A source that could not reach its region tries again with a
		// backoff of the server's, growing by 10 s each time.
		meshtest.Eventually(t, 90*time.Second, func() bool {
			got, _, err = recs[region].Get(ctx, key)
			return err == nil && got.Text == text
		}, func() string { return fmt.Sprintf("%s reads %s as %+v, %v; want %q", region, key, got, err, text) })
	}
	for _, r := range regions {
		if _, err := recs[r].Create(ctx, "made-in-"+r, &note{Text: "by " + r}); err != nil {
			t.Fatalf("create in %s: %v", r, err)
		}
	}
	for _, reader := range regions {
		for _, writer := range regions {
			seenIn(reader, "made-in-"+writer, "by "+writer)
		}
	}
	// A key one region holds is not created again in another.
	if _, err := recs["south"].Create(ctx, "made-in-west", &note{Text: "again"}); !errors.Is(err, mesh.ErrConflict) {
		t.Fatalf("create in south of a key west holds: %v; want CONFLICT", err)
	}

	sc.Stop("east")
	west, south := recs["west"], recs["south"]
	if _, err := west.Create(ctx, "made-while-east-is-down", &note{Text: "west, east down"}); err != nil {
		t.Fatalf("create in west with east down: %v", err)
	}
	if _, _, err := west.Modify(ctx, "made-in-west", func(n *note) error { n.Text = "changed with east down"; return nil }); err != nil {
		t.Fatalf("change in west of west's record with east down: %v", err)
	}
	seenIn("south", "made-while-east-is-down", "west, east down")
	seenIn("south", "made-in-west", "changed with east down")
	view, err := bus.StartMirror(ctx, conns["south"].JS, bus.BucketAgents, bus.MirrorConfig[note, *note]{Project: bus.Identity[note]})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = view.Stop() }()
	if err := view.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	meshtest.Eventually(t, 30*time.Second, func() bool {
		n, ok := view.Get("made-while-east-is-down")
		return ok && n.Text == "west, east down" && view.Len() == 4
	}, func() string {
		return fmt.Sprintf("south's view holds %d records; want the 4, west's new one included", view.Len())
	})
	if _, _, err := south.Get(ctx, "made-in-east"); err != nil {
		t.Fatalf("south reads east's record with east down: %v", err)
	}
	for i := range 2 {
		began := time.Now()
		_, _, err := west.Modify(ctx, "made-in-east", func(n *note) error { n.Text = "changed in west"; return nil })
		var down *bus.RegionUnreachableError
		if !errors.As(err, &down) || down.Region != "east" || !errors.Is(err, mesh.ErrUnavailable) {
			t.Fatalf("change %d in west of east's record with east down: %v; want UNAVAILABLE naming east", i, err)
		}
		if took := time.Since(began); i > 0 && took > time.Second {
			t.Fatalf("change %d of east's record with east down was refused after %s; want at once", i, took)
		}
	}

	sc.Start("east")
	sc.WaitJetStream()
	seenIn("east", "made-while-east-is-down", "west, east down")
	seenIn("east", "made-in-west", "changed with east down")
	if _, _, err := recs["east"].Modify(ctx, "made-in-east", func(n *note) error { n.Text = "changed once back"; return nil }); err != nil {
		t.Fatalf("change in east of its record once back: %v", err)
	}
	seenIn("west", "made-in-east", "changed once back")
}
