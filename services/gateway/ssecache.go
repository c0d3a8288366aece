package gateway

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/runfollow"
)

// sseStreams keeps the encodings of each event stream GET /events reads.
type sseStreams struct {
	mu      sync.Mutex
	streams map[string]*sseEncodings
}

// of returns the encodings of the events of stream.
func (s *sseStreams) of(stream string) *sseEncodings {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams == nil {
		s.streams = map[string]*sseEncodings{}
	}
	c, ok := s.streams[stream]
	if !ok {
		c = &sseEncodings{}
		s.streams[stream] = c
	}
	return c
}

// sseKept is how many of the latest events sseEncodings keeps.
const sseKept = 1024

// sseEncodings keeps what GET /events sends of the latest events, so the
// streams of one gateway decode and encode each event once between them
// rather than once each (a hundred streams of every event did it a hundred
// times). Events are keyed by stream sequence: there is one per stream.
type sseEncodings struct {
	mu    sync.Mutex
	slots [sseKept]*sseEncoding
	// encoded counts the events encoded, for tests.
	encoded atomic.Int64
}

// sseEncoding is one event as the streams send it.
type sseEncoding struct {
	seq  uint64
	once sync.Once
	// ok is false for an event that is not a CloudEvent: it is not sent.
	ok bool
	// typ and data are what stream filters match (eventFilter.match).
	typ  string
	data []byte
	// body is the event in structured JSON, an SSE data line.
	body []byte
}

// get returns event m encoded, encoding it if no stream did yet.
func (c *sseEncodings) get(ctx context.Context, m *runfollow.Event) *sseEncoding {
	c.mu.Lock()
	slot := &c.slots[m.Seq%sseKept]
	e := *slot
	if e == nil || e.seq != m.Seq {
		e = &sseEncoding{seq: m.Seq}
		*slot = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		c.encoded.Add(1)
		ev, err := bus.EncodeStructured(ctx, m.Msg())
		if err != nil {
			return
		}
		e.ok, e.typ, e.data, e.body = true, ev.Type, ev.Data, ev.Body
	})
	return e
}
