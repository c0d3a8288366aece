package webhooks

import (
	"testing"

	"github.com/a2amesh/a2amesh/bus"
)

// TestParts_ACopyNamesTheStreamAndSequenceItWasTakenFrom: the gathered
// log's copy of a region's event is told apart by the stream and sequence
// its Nats-Stream-Source header names.
func TestParts_ACopyNamesTheStreamAndSequenceItWasTakenFrom(t *testing.T) {
	for _, c := range []struct {
		header string
		stream string
		seq    uint64
		ok     bool
	}{
		{"MESH_EVENTS_west 1842 mesh.evt.> > mesh.evt.a.task_run.r", "MESH_EVENTS_west", 1842, true},
		{"MESH_EVENTS_south:ab12 7 > > mesh.evt.a.task_run.r", "MESH_EVENTS_south", 7, true},
		{"MESH_EVENTS_west", "", 0, false},
		{"MESH_EVENTS_west x > >", "MESH_EVENTS_west", 0, false},
	} {
		stream, seq, ok := sourcedFrom(c.header)
		if ok != c.ok || ok && (stream != c.stream || seq != c.seq) {
			t.Errorf("sourcedFrom(%q) = %q, %d, %v; want %q, %d, %v", c.header, stream, seq, ok, c.stream, c.seq, c.ok)
		}
	}
}

// TestParts_ADeliveryIsNamedByTheRegionOfThePartThatReadIt: the deliveries
// of a part are named by its region and read back to its stream; those of
// the webhook's own stream keep the bare sequence.
func TestParts_ADeliveryIsNamedByTheRegionOfThePartThatReadIt(t *testing.T) {
	west := bus.RegionEventStream("west")
	sub := &subscription{Stream: bus.EventStream, Parts: []part{
		{Region: "west", Stream: west, From: 1},
		{Region: "south", Stream: bus.RegionEventStream("south")}, // being added
	}}
	if id := deliveryID(sub, west, 42); id != "west:42" {
		t.Errorf("delivery of west's part: %q, want west:42", id)
	}
	if id := deliveryID(sub, bus.EventStream, 42); id != "42" {
		t.Errorf("delivery of the gathered log: %q, want 42", id)
	}
	for id, want := range map[string]struct {
		stream string
		seq    uint64
		ok     bool
	}{
		"west:42":  {west, 42, true},
		"42":       {bus.EventStream, 42, true},
		"south:42": {ok: false}, // no consumer yet
		"north:42": {ok: false},
		"west:x":   {ok: false},
	} {
		stream, seq, ok := sub.delivery(id)
		if ok != want.ok || ok && (stream != want.stream || seq != want.seq) {
			t.Errorf("delivery(%q) = %q, %d, %v; want %+v", id, stream, seq, ok, want)
		}
	}
}
