package runfollow

import (
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
)

// Event is one stored event. The followers of a source share the events
// they read: an Event is read-only.
type Event struct {
	// Seq is the event's stream sequence: After(Seq) resumes after it.
	Seq uint64
	// Subject is the event's subject (bus.EventSubject).
	Subject string
	// Header holds the event's headers as published (its CloudEvent
	// attributes).
	Header nats.Header
	// Data is the event's payload.
	Data []byte
	// Time is when the stream stored it.
	Time time.Time
}

// Msg is the event as a NATS message, for bus.DecodeEvent.
func (e *Event) Msg() *nats.Msg {
	return &nats.Msg{Subject: e.Subject, Header: e.Header, Data: e.Data}
}

// Kind is the kind of entity the event is about ("" when its subject is
// not an event subject).
func (e *Event) Kind() mesh.EventKind {
	_, kind, _, _ := bus.ParseEventSubject(e.Subject)
	return mesh.EventKind(kind)
}

// errNotRun: the event is not about a task run.
var errNotRun = errors.New("not a task run event")

// TaskRun is the run as the event tells it, with the revision its sequence
// says.
func (e *Event) TaskRun() (*mesh.TaskRun, error) {
	if e.Kind() != mesh.KindTaskRun {
		return nil, errNotRun
	}
	return bus.TaskRunOf(e.Header, e.Data)
}

// Headers a direct get adds to a stored message; they are taken off again,
// so an event reads as it was published.
const (
	hdrStream     = "Nats-Stream"
	hdrSubject    = "Nats-Subject"
	hdrSequence   = "Nats-Sequence"
	hdrTimeStamp  = "Nats-Time-Stamp"
	hdrNumPending = "Nats-Num-Pending"
	hdrLastSeq    = "Nats-Last-Sequence"
	hdrMsgID      = "Nats-Msg-Id"
	hdrStatus     = "Status"
	hdrDesc       = "Description"
)

// eventOf reads a direct get's answer.
func eventOf(m *nats.Msg) (*Event, error) {
	seq, err := strconv.ParseUint(m.Header.Get(hdrSequence), 10, 64)
	if err != nil {
		return nil, errors.New("direct get answer without a sequence")
	}
	e := &Event{Seq: seq, Subject: m.Header.Get(hdrSubject), Header: m.Header, Data: m.Data}
	e.Time, _ = time.Parse(time.RFC3339Nano, m.Header.Get(hdrTimeStamp))
	for _, h := range []string{hdrStream, hdrSubject, hdrSequence, hdrTimeStamp, hdrNumPending, hdrLastSeq} {
		m.Header.Del(h)
	}
	return e, nil
}
