package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/runfollow"
	"github.com/a2amesh/a2amesh/mesh"
)

// storedEvent is a task_run.completed event as a follower reads it at
// stream sequence seq.
func storedEvent(t *testing.T, seq uint64) *runfollow.Event {
	t.Helper()
	ev := event.New()
	ev.SetID(mesh.NewID())
	ev.SetSource("test")
	ev.SetType(mesh.EventTaskRunCompleted)
	if err := ev.SetData(event.ApplicationJSON, map[string]string{"id": "run"}); err != nil {
		t.Fatal(err)
	}
	subject := bus.EventSubject("agent", string(mesh.KindTaskRun), "run")
	m, err := bus.EncodeEvent(context.Background(), &ev, subject)
	if err != nil {
		t.Fatal(err)
	}
	return &runfollow.Event{Seq: seq, Subject: subject, Header: m.Header, Data: m.Data}
}

// TestSSEEncodings_EachEventIsEncodedOnceForEveryStream: a hundred streams
// sending one event at once decode and encode it once between them, and
// the next event in its slot is encoded anew.
func TestSSEEncodings_EachEventIsEncodedOnceForEveryStream(t *testing.T) {
	var c sseEncodings
	m := storedEvent(t, 7)
	got := make([]*sseEncoding, 100)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = c.get(context.Background(), m) })
	}
	wg.Wait()
	if n := c.encoded.Load(); n != 1 {
		t.Fatalf("100 streams encoded the event %d times, want once", n)
	}
	var sent struct {
		Type string `json:"type"`
	}
	if e := got[0]; !e.ok || e.seq != 7 || e.typ != mesh.EventTaskRunCompleted || json.Unmarshal(e.body, &sent) != nil || sent.Type != e.typ {
		t.Fatalf("encoded %+v (body %s)", e, got[0].body)
	}
	later := c.get(context.Background(), storedEvent(t, 7+sseKept))
	if later.seq != 7+sseKept || c.encoded.Load() != 2 {
		t.Fatalf("the event after it in its slot: sequence %d, %d encodings, want %d and 2", later.seq, c.encoded.Load(), 7+sseKept)
	}
}

// TestSSEStreams_EachStreamHasItsOwn: events of two streams at the same
// sequence (a region's own stream and the origin's gathered log) are two
// events, each sent as it is.
func TestSSEStreams_EachStreamHasItsOwn(t *testing.T) {
	var s sseStreams
	gathered := s.of(bus.EventStream).get(context.Background(), storedEvent(t, 7))
	other := storedEvent(t, 7)
	other.Header.Set("ce-type", mesh.EventTaskRunFailed)
	regional := s.of(bus.RegionEventStream("west")).get(context.Background(), other)
	if gathered == regional || gathered.typ != mesh.EventTaskRunCompleted || regional.typ != mesh.EventTaskRunFailed {
		t.Fatalf("sequence 7 of two streams: %q and %q; want each stream's own event", gathered.typ, regional.typ)
	}
	if s.of(bus.EventStream) != s.of(bus.EventStream) {
		t.Fatal("a stream's encodings are not kept")
	}
}
