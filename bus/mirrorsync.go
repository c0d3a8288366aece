package bus

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// questions shares the questions a mirror asks the server about its
// streams' last sequences: a call is answered by a question asked after
// the instant it names, so concurrent calls, and calls about an instant
// already past, mostly share questions rather than ask one each.
type questions struct {
	mu sync.Mutex
	// next is the question calls join, not asked yet; nil when none waits.
	// It is asked when the one asked last is answered, or once that one
	// has waited questionPatience for its answer.
	next *question
	// latest is the question asked last, until it is answered.
	latest *question
	// answered is the newest question answered without an error.
	answered *question
}

// questionPatience is how long a question may wait for its answer before
// the next one is asked beside it: a question sent to a server that is
// gone waits for the JetStream client's timeout, and the calls behind it
// should not, once another server answers for the stream.
const questionPatience = 250 * time.Millisecond

// question is one question and its answer: the last sequences of a
// mirror's stream and of its own stream (watching an aggregate).
type question struct {
	// askedAt is when the question was sent, by this process's clock.
	askedAt time.Time
	done    chan struct{}
	last    uint64
	own     uint64
	err     error
}

// Sync waits until the mirror holds every write the bucket had stored when
// Sync was called, so an answer built from the mirror reflects writes other
// services (or instances) acknowledged before the question was asked.
//
// Watching an aggregate of owned buckets, that is every write the
// aggregate had copied, and every write this region's owned bucket had
// stored: what this region's services acknowledged is in the answer;
// another region's writes arrive as their sources carry them.
func (m *Mirror[T, P]) Sync(ctx context.Context) error {
	return m.SyncAfter(ctx, time.Now())
}

// SyncAfter waits until the mirror holds every write the bucket had stored
// at t, an instant of this process's clock no later than now, as Sync does
// for now. Any question the server answered that was asked after t serves:
// a caller that knows its answer may only reflect writes made before some
// past event (a run it saw created) often waits for none.
func (m *Mirror[T, P]) SyncAfter(ctx context.Context, t time.Time) error {
	q := m.questionAfter(t)
	select {
	case <-q.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if q.err != nil {
		return fmt.Errorf("mirror sync: %w", q.err)
	}
	if err := m.waitUntil(ctx, func() bool { return m.seen >= q.last }); err != nil || m.own == nil {
		return err
	}
	return m.waitUntil(ctx, func() bool { return m.ownSeen >= q.own })
}

// questionAfter returns a question asked after t: the newest one answered,
// the one asked last if it is still waiting, or the next one.
func (m *Mirror[T, P]) questionAfter(t time.Time) *question {
	m.asked.mu.Lock()
	defer m.asked.mu.Unlock()
	if a := m.asked.answered; a != nil && a.askedAt.After(t) {
		return a
	}
	if l := m.asked.latest; l != nil && l.askedAt.After(t) {
		return l
	}
	q := m.asked.next
	if q == nil {
		q = &question{done: make(chan struct{})}
		m.asked.next = q
	}
	if l := m.asked.latest; l == nil || time.Since(l.askedAt) >= questionPatience {
		m.askNext()
	}
	return q
}

// askNext sends the next question. Call with m.asked.mu held.
func (m *Mirror[T, P]) askNext() {
	q := m.asked.next
	m.asked.next, m.asked.latest = nil, q
	q.askedAt = time.Now()
	go m.ask(q)
}

// ask asks q, with the JetStream client's default timeout: a caller that
// stops waiting does not end a question others wait for. Once it is
// answered, the question calls joined meanwhile is asked.
func (m *Mirror[T, P]) ask(q *question) {
	last, own, err := m.lastSeqs()
	if err != nil {
		// Logged once here, not by each of the calls that wait for it.
		m.cfg.Logger.Warn().Err(err).Str("stream", m.stream.CachedInfo().Config.Name).Msg("the stream's last sequence could not be asked: a view is not known to be up to date")
	}
	m.asked.mu.Lock()
	q.last, q.own, q.err = last, own, err
	if err == nil && (m.asked.answered == nil || q.askedAt.After(m.asked.answered.askedAt)) {
		m.asked.answered = q
	}
	if m.asked.latest == q {
		m.asked.latest = nil
		if m.asked.next != nil {
			m.askNext()
		}
	}
	m.asked.mu.Unlock()
	close(q.done)
}

func (m *Mirror[T, P]) lastSeqs() (last, own uint64, err error) {
	ctx := context.Background()
	info, err := m.stream.Info(ctx)
	if err != nil {
		return 0, 0, err
	}
	if m.own == nil {
		return info.State.LastSeq, 0, nil
	}
	ownInfo, err := m.own.Info(ctx)
	if err != nil {
		return 0, 0, err
	}
	return info.State.LastSeq, ownInfo.State.LastSeq, nil
}
