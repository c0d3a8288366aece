package listing

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/nats-io/nats.go/jetstream"
)

type record struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
}

type view struct{ ID string }

// TestAll_ListsEveryMatchedRecordAsItsViewInIDOrder: the records under the
// filter are listed by id whatever order they were written in, others
// are not, and an empty bucket lists as an empty list, not nil.
func TestAll_ListsEveryMatchedRecordAsItsViewInIDOrder(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1})
	conn := clustertest.ProvisionedBus(t, c.URL(0), "listing test", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := conn.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "listing-test"}); err != nil {
		t.Fatal(err)
	}
	store, err := bus.OpenRecords[record](ctx, conn.JS, "listing-test")
	if err != nil {
		t.Fatal(err)
	}
	toView := func(r *record) view { return view{ID: r.ID} }
	byID := func(v *view) string { return v.ID }

	empty, err := All(ctx, store, jetstream.AllKeys, toView, byID)
	if err != nil || empty == nil || len(empty) != 0 {
		t.Fatalf("an empty bucket: %v, %v; want an empty list", empty, err)
	}
	for _, id := range []string{"c", "a", "b"} {
		if _, err := store.Create(ctx, "item."+id, &record{ID: id, Secret: "s"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Create(ctx, "other.z", &record{ID: "z"}); err != nil {
		t.Fatal(err)
	}
	got, err := All(ctx, store, "item.*", toView, byID)
	if err != nil {
		t.Fatal(err)
	}
	if want := []view{{"a"}, {"b"}, {"c"}}; !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
}
