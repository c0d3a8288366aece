package runfollow

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/bus"
)

// directGet is the body of a JetStream direct get.
type directGet struct {
	Seq       uint64     `json:"seq,omitempty"`
	LastFor   string     `json:"last_by_subj,omitempty"`
	NextFor   string     `json:"next_by_subj,omitempty"`
	Batch     int        `json:"batch,omitempty"`
	MaxBytes  int        `json:"max_bytes,omitempty"`
	StartTime *time.Time `json:"start_time,omitempty"`
}

// fetch reads the next events of filter i after its position, as a read
// sent after stamp need would; it returns the stamp of the read they come
// from too.
func (f *Follower) fetch(ctx context.Context, i int, need uint64) ([]*Event, bool, uint64, error) {
	flt := f.filters[i]
	if flt.pos == 0 && !flt.since.IsZero() {
		// A start at a time is one follower's own: read it alone.
		since := flt.since
		sent := f.src.stamp()
		evs, more, err := f.src.get(ctx, directGet{NextFor: nextFor(flt.subject), Batch: f.src.cfg.Batch, MaxBytes: maxReadBytes, StartTime: &since})
		return evs, more, sent, err
	}
	return flt.tail.next(ctx, flt.pos, need)
}

// nextFor is the filter a read of subject is sent with. The filter of
// every event is sent as ">": an event stream holds nothing else, and its
// store counts what follows a position for ">" in constant time, where for
// the wildcard of every event it walks every subject it holds, on each read
// (a batch read's answer says how many events follow), a cost that grows
// with the runs the stream keeps.
func nextFor(subject string) string {
	if subject == bus.EventStreamSubjects()[0] {
		return ">"
	}
	return subject
}

// LastSeq is the stream sequence of the stream's last event (0 when it has
// none).
func (s *Source) LastSeq(ctx context.Context) (uint64, error) {
	evs, _, err := s.get(ctx, directGet{LastFor: ">"})
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	return evs[0].Seq, nil
}

// get makes one direct get and waits for its answers.
func (s *Source) get(ctx context.Context, req directGet) ([]*Event, bool, error) {
	g, err := s.send(req, nil)
	if err != nil {
		return nil, false, err
	}
	select {
	case <-g.done:
		return g.evs, g.more, g.err
	case <-ctx.Done():
		s.finish(g, fmt.Errorf("read %s: %w", s.cfg.Stream, ctx.Err()))
		return nil, false, ctx.Err()
	}
}

// dget is a direct get under way. Its answers are taken as they come, on
// the goroutine of the source's one subscription for them, so no reader
// has to wait for them: a read several followers share goes on when the
// one that sent it leaves.
type dget struct {
	req   directGet
	reply string
	// sent is the stamp taken as it was sent.
	sent uint64
	// ended, when set, is called as the read ends, before done is closed.
	ended func(*dget)
	timer *time.Timer
	// done is closed when the read ended: its last answer came, the stream
	// refused it, or ReadTimeout passed. The rest is set before.
	done chan struct{}
	evs  []*Event
	more bool
	err  error
}

// send sends a direct get.
func (s *Source) send(req directGet, ended func(*dget)) (*dget, error) {
	s.muxOnce.Do(func() {
		s.inbox = s.nc.NewRespInbox()
		s.calls = map[string]*dget{}
		_, s.muxErr = s.nc.Subscribe(s.inbox+".*", s.answer)
	})
	if s.muxErr != nil {
		return nil, fmt.Errorf("read %s: %w", s.cfg.Stream, s.muxErr)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	g := &dget{req: req, ended: ended, done: make(chan struct{})}
	s.mu.Lock()
	s.lastID++
	g.reply = s.inbox + "." + strconv.FormatUint(s.lastID, 36)
	s.calls[g.reply] = g
	g.timer = time.AfterFunc(s.cfg.ReadTimeout, func() {
		s.finish(g, fmt.Errorf("read %s: %w", s.cfg.Stream, context.DeadlineExceeded))
	})
	s.mu.Unlock()
	s.reads.Add(1)
	g.sent = s.stamp()
	if err := s.nc.PublishRequest(s.directGet, g.reply, body); err != nil {
		// Not sent: ended is not called (its caller may hold a lock it takes).
		s.mu.Lock()
		delete(s.calls, g.reply)
		s.mu.Unlock()
		g.timer.Stop()
		return nil, fmt.Errorf("read %s: %w", s.cfg.Stream, err)
	}
	return g, nil
}

// answer takes an answer to a direct get; answers of a read that ended are
// dropped.
func (s *Source) answer(m *nats.Msg) {
	s.mu.Lock()
	g := s.calls[m.Subject]
	if g == nil {
		s.mu.Unlock()
		return
	}
	over, err := g.take(m, s.cfg.Stream)
	s.mu.Unlock()
	if over {
		s.finish(g, err)
	}
}

// take adds one answer to g, saying whether it was the last. Called with
// the source's mu held.
func (g *dget) take(m *nats.Msg, stream string) (bool, error) {
	switch code := m.Header.Get(hdrStatus); code {
	case "":
		e, err := eventOf(m)
		if err != nil {
			return true, fmt.Errorf("read %s: %w", stream, err)
		}
		g.evs = append(g.evs, e)
		return g.req.Batch == 0, nil
	case "404":
		return true, nil
	case "204":
		// End of batch: how many more match after it.
		np, _ := strconv.ParseUint(m.Header.Get(hdrNumPending), 10, 64)
		g.more = np > 0
		return true, nil
	case "503":
		return true, fmt.Errorf("read %s: no server answers direct gets on it (the stream is missing, or does not allow them)", stream)
	default:
		return true, fmt.Errorf("read %s: %s %s", stream, code, m.Header.Get(hdrDesc))
	}
}

// finish ends g with err (nil: it was answered), once.
func (s *Source) finish(g *dget, err error) {
	s.mu.Lock()
	if s.calls[g.reply] != g {
		s.mu.Unlock()
		return
	}
	delete(s.calls, g.reply)
	if err != nil {
		g.evs, g.more, g.err = nil, false, err
	}
	s.mu.Unlock()
	g.timer.Stop()
	if g.ended != nil {
		g.ended(g)
	}
	close(g.done)
}
