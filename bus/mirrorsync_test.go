package bus

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

type syncNote struct {
	Text string `json:"text"`
}

// syncedMirror starts a mirror of a fresh bucket and counts the questions
// about the bucket's stream asked from then on: a copy of each request
// reaches the counting subscription before the server answers it.
func syncedMirror(t *testing.T) (*Mirror[syncNote, *syncNote], jetstream.KeyValue, func() int) {
	t.Helper()
	conn := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := conn.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "sync_test"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := StartMirror(ctx, conn.JS, "sync_test", MirrorConfig[syncNote, *syncNote]{Project: Identity[syncNote]})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	asked, err := conn.NC.SubscribeSync("$JS.API.STREAM.INFO.KV_sync_test")
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		n, _, err := asked.Pending()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return m, kv, count
}

// TestMirror_SyncHoldsWritesStoredBeforeIt: Sync returns once the mirror
// holds a write the bucket stored before the call.
func TestMirror_SyncHoldsWritesStoredBeforeIt(t *testing.T) {
	m, kv, _ := syncedMirror(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 20 {
		text := string(rune('a' + i))
		if _, err := kv.Put(ctx, "note", []byte(`{"text":"`+text+`"}`)); err != nil {
			t.Fatal(err)
		}
		if err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if got, ok := m.Get("note"); !ok || got.Text != text {
			t.Fatalf("after write %q and Sync the mirror holds %+v (held %v)", text, got, ok)
		}
	}
}

// TestMirror_ConcurrentSyncsShareQuestions: calls made together share the
// server's answers rather than ask one question each.
func TestMirror_ConcurrentSyncsShareQuestions(t *testing.T) {
	m, _, asked := syncedMirror(t)
	const calls = 64
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for range calls {
		wg.Go(func() {
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			errs <- m.Sync(ctx)
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := asked(); n == 0 || n > calls/2 {
		t.Fatalf("%d concurrent calls asked the server %d questions, want at least 1 and at most %d", calls, n, calls/2)
	}
}

// TestMirror_SyncAfterAnAnsweredInstantAsksNothing: a question asked after
// the instant a call names answers it; a call about now asks again.
func TestMirror_SyncAfterAnAnsweredInstantAsksNothing(t *testing.T) {
	m, _, asked := syncedMirror(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before := time.Now()
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := asked(); n != 1 {
		t.Fatalf("one Sync asked %d questions, want 1", n)
	}
	if err := m.SyncAfter(ctx, before); err != nil {
		t.Fatal(err)
	}
	if n := asked(); n != 1 {
		t.Fatalf("SyncAfter an instant before an answered question asked %d questions in all, want still 1", n)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := asked(); n != 2 {
		t.Fatalf("a second Sync made %d questions in all, want 2", n)
	}
}
