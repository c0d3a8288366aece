package bus

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// metaRequests records the JetStream API requests that need the meta
// leader: creating or updating streams and consumers, listing streams.
type metaRequests struct {
	// msgs is filled by the connection's reader, so a flush returns only
	// once every request sent before it is in.
	msgs chan *nats.Msg
}

func watchMetaRequests(t *testing.T, nc *nats.Conn) *metaRequests {
	t.Helper()
	m := &metaRequests{msgs: make(chan *nats.Msg, 1024)}
	for _, subj := range []string{"$JS.API.STREAM.CREATE.>", "$JS.API.STREAM.UPDATE.>", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST", "$JS.API.CONSUMER.CREATE.>", "$JS.API.CONSUMER.DURABLE.CREATE.>"} {
		if _, err := nc.ChanSubscribe(subj, m.msgs); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *metaRequests) take(t *testing.T, nc *nats.Conn) []string {
	t.Helper()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for {
		select {
		case msg := <-m.msgs:
			seen = append(seen, msg.Subject)
		default:
			return seen
		}
	}
}

// TestProvision_AsksTheMetaLeaderOnlyForWhatIsMissingOrDrifted: provisioning
// a complete deployment again creates and updates nothing (so a process
// starts while a supercluster's meta group has no quorum), and readiness
// lists no streams; a setting that changed updates just the streams it
// concerns.
func TestProvision_AsksTheMetaLeaderOnlyForWhatIsMissingOrDrifted(t *testing.T) {
	conn := embeddedConn(t)
	watcher, err := nats.Connect("", nats.InProcessServer(conn.NC.Opts.InProcessServer))
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	meta := watchMetaRequests(t, watcher)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Provision(ctx, conn.JS, ProvisionConfig{}); err != nil {
		t.Fatal(err)
	}
	if created := meta.take(t, watcher); len(created) != len(ProvisionedStreams()) {
		t.Fatalf("the first provisioning made %d requests of the meta leader, want one create per stream (%d): %v", len(created), len(ProvisionedStreams()), created)
	}
	if err := Provision(ctx, conn.JS, ProvisionConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := Provisioned(ctx, conn.JS); err != nil {
		t.Fatal(err)
	}
	if again := meta.take(t, watcher); len(again) != 0 {
		t.Fatalf("provisioning a complete deployment again asked the meta leader: %v", again)
	}
	if err := Provision(ctx, conn.JS, ProvisionConfig{EventRetention: time.Hour}); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"$JS.API.STREAM.UPDATE." + EventStream: true, "$JS.API.STREAM.UPDATE.KV_" + BucketDeliveries: true}
	updated := meta.take(t, watcher)
	if len(updated) != len(want) {
		t.Fatalf("a new event retention made %v, want updates of %v", updated, want)
	}
	for _, subj := range updated {
		if !want[subj] {
			t.Fatalf("a new event retention made %v, want updates of %v", updated, want)
		}
	}
	info, err := conn.JS.Stream(ctx, EventStream)
	if err != nil {
		t.Fatal(err)
	}
	if info.CachedInfo().Config.MaxAge != time.Hour {
		t.Fatalf("event retention after the update: %s", info.CachedInfo().Config.MaxAge)
	}
}
