package meshtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
)

// StoredEvents returns every event in the platform's event stream, headers
// and data, as one text: what secret scans search.
func (p *Platform) StoredEvents(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := p.Conn().JS
	stream, err := js.Stream(ctx, bus.EventStream)
	if err != nil {
		t.Fatalf("event stream: %v", err)
	}
	last := stream.CachedInfo().State.LastSeq
	cons, err := js.OrderedConsumer(ctx, bus.EventStream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		t.Fatalf("read events: %v", err)
	}
	var b strings.Builder
	for seq := uint64(0); seq < last; {
		batch, err := cons.Fetch(1000, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatalf("read events: %v", err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			if meta, err := m.Metadata(); err == nil {
				seq = meta.Sequence.Stream
			}
			for k, vs := range m.Headers() {
				b.WriteString(k + ": " + strings.Join(vs, ",") + "\n")
			}
			b.Write(m.Data())
			b.WriteString("\n")
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			t.Fatalf("read events: %v", err)
		}
		if got == 0 {
			break
		}
	}
	return b.String()
}
