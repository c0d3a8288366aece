package clustertest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const testDelay = 40 * time.Millisecond

func startRegions(t *testing.T) *Supercluster {
	return StartSupercluster(t, SuperclusterOptions{
		Regions: []Region{{Name: "east", Nodes: 2}, {Name: "west"}, {Name: "south"}},
		Delay:   testDelay,
	})
}

// echo answers requests on subject from nc.
func echo(t *testing.T, nc *nats.Conn, subject string) {
	t.Helper()
	if _, err := nc.Subscribe(subject, func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// fastestRoundTrip is the shortest of a few request round trips from nc on
// subject, once one is answered at all. The shortest is the distance: load
// on the machine only ever adds to it.
func fastestRoundTrip(t *testing.T, nc *nats.Conn, subject string) time.Duration {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := nc.Request(subject, []byte("ping"), 2*time.Second); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no answer on %s: %v", subject, err)
		}
	}
	best := time.Hour
	for range 10 {
		start := time.Now()
		if _, err := nc.Request(subject, []byte("ping"), 5*time.Second); err != nil {
			t.Fatalf("request on %s: %v", subject, err)
		}
		best = min(best, time.Since(start))
	}
	return best
}

func TestSupercluster_GatewayLinksAddTheirDelayEachWay(t *testing.T) {
	sc := startRegions(t)
	west, _ := sc.Connect("west", 0)
	east, _ := sc.Connect("east", 1)
	echo(t, west, "probe.echo")

	// A delayed round trip takes at least twice the delay whatever the
	// load; one without the delay takes less at least once in ten tries
	// even on a busy machine.
	if local := fastestRoundTrip(t, west, "probe.echo"); local >= 2*testDelay {
		t.Fatalf("a round trip within west took %s, as long as one across a delayed gateway link", local)
	}
	if remote := fastestRoundTrip(t, east, "probe.echo"); remote < 2*testDelay {
		t.Fatalf("a round trip from east to west took %s, less than twice the link delay %s", remote, testDelay)
	}
	sc.SetDelay("east", "west", 0)
	if remote := fastestRoundTrip(t, east, "probe.echo"); remote >= 2*testDelay {
		t.Fatalf("with the delay removed, a round trip from east to west took %s", remote)
	}
}

func TestSupercluster_GatewayTrafficIsCountedPerRegionAndAccount(t *testing.T) {
	sc := startRegions(t)
	west, _ := sc.Connect("west", 0)
	east, _ := sc.Connect("east", 0)
	echo(t, west, "probe.echo")
	fastestRoundTrip(t, east, "probe.echo") // interest known in east

	var got atomic.Int64
	done := make(chan struct{})
	const n, size = 100, 1024
	if _, err := west.Subscribe("probe.count", func(*nats.Msg) {
		if got.Add(1) == n {
			close(done)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := west.Flush(); err != nil {
		t.Fatal(err)
	}
	// The subscription's interest reaches east over the gateway; until
	// then east's messages may not be sent there.
	fastestRoundTrip(t, east, "probe.echo")

	eastBefore, westBefore := sc.GatewayTraffic("east")["west"], sc.GatewayTraffic("west")["east"]
	accBefore := sc.AccountTraffic("east", bus.AccountPlatform)
	payload := make([]byte, size)
	for range n {
		if err := east.Publish("probe.count", payload); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("west received %d of %d messages", got.Load(), n)
	}
	sent := sc.GatewayTraffic("east")["west"].Sub(eastBefore)
	if sent.SentMsgs < n || sent.SentBytes < n*size {
		t.Fatalf("east counts %d messages, %d bytes sent to west; want at least %d, %d", sent.SentMsgs, sent.SentBytes, n, n*size)
	}
	received := sc.GatewayTraffic("west")["east"].Sub(westBefore)
	if received.ReceivedMsgs < n || received.ReceivedBytes < n*size {
		t.Fatalf("west counts %d messages, %d bytes received from east; want at least %d, %d",
			received.ReceivedMsgs, received.ReceivedBytes, n, n*size)
	}
	acc := sc.AccountTraffic("east", bus.AccountPlatform).Sub(accBefore)
	if acc.SentMsgs < n || acc.SentBytes < n*size {
		t.Fatalf("east's %s account counts %d messages, %d bytes sent over gateways; want at least %d, %d",
			bus.AccountPlatform, acc.SentMsgs, acc.SentBytes, n, n*size)
	}
}

func TestSupercluster_ARegionRestartsWithItsPortsAndStore(t *testing.T) {
	sc := startRegions(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	west, westJS := sc.Connect("west", 0)
	east, _ := sc.Connect("east", 0)
	st, err := westJS.CreateStream(ctx, jetstream.StreamConfig{
		Name: "WEST_ONLY", Subjects: []string{"west.only"}, Placement: &jetstream.Placement{Cluster: "west"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := westJS.Publish(ctx, "west.only", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if info := st.CachedInfo(); info.Cluster == nil || info.Cluster.Name != "west" {
		t.Fatalf("stream placed in %+v, want west", info.Cluster)
	}
	echo(t, west, "probe.echo")
	fastestRoundTrip(t, east, "probe.echo")

	sc.Stop("west")
	if nc, err := nats.Connect(sc.URL("west", 0), nats.UserInfo(ServiceUser, sc.Password()), nats.NoReconnect()); err == nil {
		nc.Close()
		t.Fatal("west still takes connections after Stop")
	}
	if _, err := east.Request("probe.echo", nil, time.Second); !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("a request to stopped west was answered (err %v)", err)
	}

	sc.Start("west")
	sc.WaitJetStream()
	// The old connection reconnects to the same address, and its
	// subscription is reachable from east again.
	fastestRoundTrip(t, east, "probe.echo")
	msg, err := westJS.Stream(ctx, "WEST_ONLY")
	if err != nil {
		t.Fatal(err)
	}
	got, err := msg.GetLastMsgForSubject(ctx, "west.only")
	if err != nil {
		t.Fatalf("the stream's message after west's restart: %v", err)
	}
	if string(got.Data) != "kept" {
		t.Fatalf("after the restart the stream holds %q", got.Data)
	}
}
