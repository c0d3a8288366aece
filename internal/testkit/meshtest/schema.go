package meshtest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/schemas"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ValidateStoredEvents reads every event in the platform's event stream and
// checks each against the published schemas (the structured CloudEvent
// envelope and the data schema of its type), failing the test for each one
// that does not match. StartPlatform runs it when the platform stops, so
// every test that starts a platform checks every event it caused.
func (p *Platform) ValidateStoredEvents(t testing.TB) int {
	t.Helper()
	v, err := schemas.Events()
	if err != nil {
		t.Fatalf("event schemas: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := p.Conn().JS
	stream, err := js.Stream(ctx, bus.EventStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// A test removed the stream on purpose: nothing is left to check.
		return 0
	}
	if err != nil {
		t.Errorf("event stream: %v", err)
		return 0
	}
	last := stream.CachedInfo().State.LastSeq
	if last == 0 {
		return 0
	}
	cons, err := js.OrderedConsumer(ctx, bus.EventStream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		t.Errorf("read events: %v", err)
		return 0
	}
	n := 0
	for seq := uint64(0); seq < last; {
		batch, err := cons.Fetch(1000, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Errorf("read events: %v", err)
			return n
		}
		got := 0
		for m := range batch.Messages() {
			got++
			meta, err := m.Metadata()
			if err != nil {
				t.Errorf("event metadata: %v", err)
				return n
			}
			seq = meta.Sequence.Stream
			n++
			if err := validateStored(ctx, v, m); err != nil {
				t.Errorf("event #%d on %s does not match its schema: %v", seq, m.Subject(), err)
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			t.Errorf("read events: %v", err)
			return n
		}
		if got == 0 {
			t.Errorf("read events: stopped at #%d of %d", seq, last)
			return n
		}
	}
	return n
}

func validateStored(ctx context.Context, v *schemas.EventValidator, m jetstream.Msg) error {
	e, err := bus.DecodeEvent(ctx, &nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
	if err != nil {
		return err
	}
	structured, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return v.Validate(structured)
}
