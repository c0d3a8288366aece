package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/jetstream"
)

type note struct {
	Text string `json:"text"`
}

// laggingReplica starts three JetStream nodes and a relay without
// JetStream, makes an R3 bucket with direct gets (as Provision does), and
// cuts one follower off from the other two nodes while it stays reachable
// from the relay: it keeps answering direct gets from what it had. It
// returns the bucket seen from the leader's node and from the relay.
func laggingReplica(t *testing.T) (writer, reader *bus.Records[note]) {
	t.Helper()
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, Relays: 1})
	_, js := c.Connect(0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "notes", Replicas: 3, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	leader := c.StreamLeader("KV_notes")
	_, ljs := c.Connect(leader)
	w, err := bus.OpenRecords[note](ctx, ljs, "notes")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Put(ctx, "decided", &note{Text: "old"}); err != nil {
		t.Fatal(err)
	}
	c.WaitCurrent("KV_notes")
	follower := (leader + 1) % 3
	for other := range 3 {
		if other != follower {
			c.Cut(follower, other)
		}
	}
	_, rjs := c.Connect(3)
	r, err := bus.OpenRecords[note](ctx, rjs, "notes")
	if err != nil {
		t.Fatal(err)
	}
	return w, r
}

// TestRecords_GetReadsTheLatestRevisionWhileAReplicaLags: a record changed
// (or created) on the leader is read at its latest revision from any node,
// even when a replica that still answers direct gets has not heard of the
// change. Peek, meant for lists, may read the lagging replica.
func TestRecords_GetReadsTheLatestRevisionWhileAReplicaLags(t *testing.T) {
	w, r := laggingReplica(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rev, err := w.Put(ctx, "decided", &note{Text: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Create(ctx, "created", &note{Text: "fresh"}); err != nil {
		t.Fatal(err)
	}

	const reads = 40
	staleSeen := 0
	for range reads {
		v, got, err := r.Get(ctx, "decided")
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if got != rev || v.Text != "new" {
			t.Fatalf("get read revision %d (%q), want the latest %d", got, v.Text, rev)
		}
		if _, _, err := r.Get(ctx, "created"); err != nil {
			t.Fatalf("get of a record created on the leader: %v", err)
		}
		if _, got, err := r.Peek(ctx, "decided"); err == nil && got < rev {
			staleSeen++
		}
	}
	// The premise: the lagging replica does answer direct gets.
	if staleSeen == 0 {
		t.Fatalf("no direct get of %d reached the lagging replica; the test shows nothing", reads)
	}
}

// TestRecords_ModifyDecidesOnTheLatestRevision: a read-modify-write from a
// node whose nearest replica lags starts from the latest revision, so it
// neither loses the last write nor refuses on a state long gone.
func TestRecords_ModifyDecidesOnTheLatestRevision(t *testing.T) {
	w, r := laggingReplica(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := w.Put(ctx, "decided", &note{Text: "new"}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		seen := ""
		_, _, err := r.Modify(ctx, "decided", func(n *note) error {
			seen = n.Text
			if n.Text == "old" {
				return errors.New("decided on a stale record")
			}
			return bus.ErrSkip
		})
		if err != nil {
			t.Fatalf("modify %d saw %q: %v", i, seen, err)
		}
	}
	if _, _, err := r.Get(ctx, "never-written"); !errors.Is(err, mesh.ErrNotFound) {
		t.Fatalf("get of a missing key: %v, want NOT_FOUND", err)
	}
}
