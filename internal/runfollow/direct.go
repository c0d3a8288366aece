package runfollow

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
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

// fetch reads the next events of filter i after its position.
func (f *Follower) fetch(ctx context.Context, i int) ([]*Event, bool, error) {
	flt := f.filters[i]
	req := directGet{NextFor: flt.subject, Batch: f.src.cfg.Batch, MaxBytes: maxReadBytes}
	if flt.pos == 0 && !flt.since.IsZero() {
		since := flt.since
		req.StartTime = &since
	} else {
		req.Seq = flt.pos + 1
	}
	return f.get(ctx, req)
}

// lastSeq is the stream sequence of the stream's last event (0 when it has
// none).
func (f *Follower) lastSeq(ctx context.Context) (uint64, error) {
	evs, _, err := f.get(ctx, directGet{LastFor: ">"})
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	return evs[0].Seq, nil
}

// get makes one direct get and collects its answers: one message, or for a
// batch the messages and an end-of-batch status saying whether more match.
func (f *Follower) get(ctx context.Context, req directGet) ([]*Event, bool, error) {
	stream := f.src.cfg.Stream
	answers, done, err := f.src.call(req)
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", stream, err)
	}
	defer done()
	rctx, cancel := context.WithTimeout(ctx, f.src.cfg.ReadTimeout)
	defer cancel()
	var evs []*Event
	for {
		var m *nats.Msg
		select {
		case m = <-answers:
		case <-rctx.Done():
			return nil, false, fmt.Errorf("read %s: %w", stream, rctx.Err())
		}
		switch code := m.Header.Get(hdrStatus); code {
		case "":
			e, err := eventOf(m)
			if err != nil {
				return nil, false, fmt.Errorf("read %s: %w", stream, err)
			}
			evs = append(evs, e)
			if req.Batch == 0 {
				return evs, false, nil
			}
		case "404":
			return evs, false, nil
		case "204":
			// End of batch: how many more match after it.
			np, _ := strconv.ParseUint(m.Header.Get(hdrNumPending), 10, 64)
			return evs, np > 0, nil
		case "503":
			return nil, false, fmt.Errorf("read %s: no server answers direct gets on it (the stream is missing, or does not allow them)", stream)
		default:
			return nil, false, fmt.Errorf("read %s: %s %s", stream, code, m.Header.Get(hdrDesc))
		}
	}
}

// call sends a direct get; its answers come on the channel until done is
// called.
func (s *Source) call(req directGet) (<-chan *nats.Msg, func(), error) {
	s.muxOnce.Do(func() {
		s.inbox = s.nc.NewRespInbox()
		s.calls = map[string]chan *nats.Msg{}
		_, s.muxErr = s.nc.Subscribe(s.inbox+".*", s.answer)
	})
	if s.muxErr != nil {
		return nil, nil, s.muxErr
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	// Room for a whole batch and its end, so the answer never waits.
	answers := make(chan *nats.Msg, max(req.Batch, 1)+1)
	s.mu.Lock()
	s.lastID++
	reply := s.inbox + "." + strconv.FormatUint(s.lastID, 36)
	s.calls[reply] = answers
	s.mu.Unlock()
	done := func() {
		s.mu.Lock()
		delete(s.calls, reply)
		s.mu.Unlock()
	}
	s.reads.Add(1)
	if err := s.nc.PublishRequest(s.directGet, reply, body); err != nil {
		done()
		return nil, nil, err
	}
	return answers, done, nil
}

// answer hands a direct get's answer to its caller; answers of a read given
// up on are dropped.
func (s *Source) answer(m *nats.Msg) {
	s.mu.Lock()
	answers := s.calls[m.Subject]
	s.mu.Unlock()
	if answers == nil {
		return
	}
	select {
	case answers <- m:
	default:
	}
}
