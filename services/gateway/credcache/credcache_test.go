package credcache_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/bus/embedded"
	"github.com/a2amesh/a2amesh/services/gateway/credcache"
)

type state struct {
	Active bool `json:"active"`
}

func startMemory(t *testing.T) (jetstream.KeyValue, *credcache.Memory[state, string]) {
	t.Helper()
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.ConnConfig{Server: srv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.NC.Close)
	kv, err := conn.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "records"})
	if err != nil {
		t.Fatal(err)
	}
	memory, err := credcache.Start[state, string](ctx, conn.JS, "records",
		func(_ string, s *state, rev uint64) (credcache.Record, bool) {
			return credcache.Record{Rev: rev, Active: s.Active}, true
		}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(memory.Stop)
	return kv, memory
}

// TestMemory_RemembersAYesForARecordItsViewHasNotSeenYet: a credential
// admitted from a record written a moment before (a key just created) is
// remembered though the view's watch had not delivered the record yet; it
// is not asked about again.
func TestMemory_RemembersAYesForARecordItsViewHasNotSeenYet(t *testing.T) {
	kv, memory := startMemory(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 50 {
		key := "record-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		rev, err := kv.Put(ctx, key, []byte(`{"active":true}`))
		if err != nil {
			t.Fatal(err)
		}
		hash := "hash-" + key
		memory.Put(ctx, hash, key, rev, key)
		if got, ok := memory.Get(hash); !ok || got != key {
			t.Fatalf("credential %d admitted at revision %d was not remembered (got %q, %v)", i, rev, got, ok)
		}
	}
}

// TestMemory_ForgetsACredentialWhenItsRecordChanges: once the view holds
// a later revision of the record (revoked elsewhere), the credential is
// no longer remembered; one admitted from an inactive record never is.
func TestMemory_ForgetsACredentialWhenItsRecordChanges(t *testing.T) {
	kv, memory := startMemory(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rev, err := kv.Put(ctx, "r", []byte(`{"active":true}`))
	if err != nil {
		t.Fatal(err)
	}
	memory.Put(ctx, "h", "r", rev, "r")
	if _, ok := memory.Get("h"); !ok {
		t.Fatal("the credential was not remembered")
	}
	if _, err := kv.Put(ctx, "r", []byte(`{"active":false}`)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := memory.Get("h"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the credential was still remembered 5 s after its record was revoked")
		}
		time.Sleep(5 * time.Millisecond)
	}
	inactive, err := kv.Put(ctx, "s", []byte(`{"active":false}`))
	if err != nil {
		t.Fatal(err)
	}
	memory.Put(ctx, "i", "s", inactive, "s")
	if _, ok := memory.Get("i"); ok {
		t.Fatal("a credential of an inactive record was remembered")
	}
}
