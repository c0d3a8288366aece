package bus

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus/embedded"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// TestRestartSource_OnceWithinTheGraceWhateverProcessAsks: a restarted
// source is stamped in its stream's metadata, and a second restart within
// sourceRestartGrace (another process of the region finding the source
// still unheard while it connects) leaves it alone. The source goes on
// from the last message it copied: nothing is copied twice or skipped.
func TestRestartSource_OnceWithinTheGraceWhateverProcessAsks(t *testing.T) {
	js := embeddedJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORIGIN", Subjects: []string{"origin.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "COPY", Sources: []*jetstream.StreamSource{{Name: "ORIGIN"}}}); err != nil {
		t.Fatal(err)
	}
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := js.Publish(ctx, fmt.Sprintf("origin.%d", i), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	copied := func(want uint64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			s, err := js.Stream(ctx, "COPY")
			if err == nil && s.CachedInfo().State.Msgs == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("COPY never held %d messages: %+v, %v", want, s.CachedInfo().State, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	stamp := func() string {
		s, err := js.Stream(ctx, "COPY")
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().Config.Metadata[metaRestarted+"ORIGIN"]
	}
	publish(0, 3)
	copied(3)

	a, b := newTender(js, zerolog.Nop()), newTender(js, zerolog.Nop())
	if err := a.restart(ctx, "COPY", "ORIGIN"); err != nil {
		t.Fatalf("restart: %v", err)
	}
	first := stamp()
	if first == "" {
		t.Fatal("a restarted source is not stamped in its stream's metadata")
	}
	if err := b.restart(ctx, "COPY", "ORIGIN"); err != nil {
		t.Fatalf("a second restart: %v", err)
	}
	if again := stamp(); again != first {
		t.Fatalf("a second restart within the grace restarted the source again (stamp %s, then %s)", first, again)
	}
	publish(3, 5)
	copied(5)
}

// embeddedJetStream starts an embedded server, as a2a-platform up does, and
// connects to it in process.
func embeddedJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect("", nats.InProcessServer(srv.NATS()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
