package runfollow

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// ErrStopped is returned by Next after Stop.
var ErrStopped = errors.New("follower stopped")

// Follower reads the events of a set of subject filters in stream order.
// Next is called from one goroutine at a time; Stop from any.
type Follower struct {
	src     *Source
	filters []filter
	// listening counts the filters listening for wake-ups.
	listening int
	status    chan nats.Status
	timer     *time.Timer
	// wake has a value when a core message arrived since the last read.
	wake chan struct{}
	done chan struct{}
	once sync.Once
	// ready holds events read and not yet returned.
	ready []*Event
	// now: read before waiting. fresh: the follower has just (re)started,
	// so a subscription may not have reached every server yet; it reads
	// on the retry schedule although it was not woken. step is the next
	// retry; polling is set while the timer waits for a poll.
	now, fresh, polling bool
	step                int
	failures            int

	mu sync.Mutex
	// dirty marks the filters a core message woke since their last read.
	dirty []bool
	// pending holds the message ids of events a core message announced and
	// no read returned yet, with the filter that woke.
	pending map[string]int
	// recent holds the ids of the events read lately, so a core message
	// that arrives after its event was read is not waited for.
	recent recentIDs
	anon   uint64
	// need is the stamp a read must be newer than to answer the follower:
	// taken when it was last woken, or the stamp of its last answer.
	need uint64
}

type filter struct {
	subject string
	// pos is the stream sequence of the last event read for this filter.
	pos uint64
	// since, until an event is read, starts the filter at a time.
	since time.Time
	// tail shares the reads of the subject with the source's other
	// followers of it.
	tail *tail
}

// maxPending bounds the events a follower remembers being woken for; past
// it (a reader that does not read) it just reads until nothing is left.
const maxPending = 1024

// Follow starts following the events on subjects from pos. Subjects may
// hold wildcards and must not overlap. Events of one subject filter come
// in stream order; events of several are merged in stream order as well
// (an event of one filter stored just before an event of another can come
// after it only when the stream's replicas answer reads unevenly).
func (s *Source) Follow(ctx context.Context, subjects []string, pos Position) (*Follower, error) {
	if len(subjects) == 0 {
		return nil, errors.New("follow: no subjects")
	}
	f := &Follower{
		src:     s,
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		dirty:   make([]bool, len(subjects)),
		pending: map[string]int{},
		now:     true,
		fresh:   true,
	}
	for i := range f.dirty {
		f.dirty[i] = true
	}
	var err error
	// Subscribed before the position is taken, so every event stored
	// after it wakes the follower.
	for _, subj := range subjects {
		f.filters = append(f.filters, filter{subject: subj})
	}
	for i, subj := range subjects {
		t, err := s.wakes.listen(subj, f, i)
		if err != nil {
			f.Stop()
			return nil, err
		}
		f.filters[i].tail = t
		f.listening++
	}
	start := pos.after
	if pos.now {
		if start, err = s.LastSeq(ctx); err != nil {
			f.Stop()
			return nil, fmt.Errorf("follow: %w", err)
		}
	}
	for i := range f.filters {
		f.filters[i].pos, f.filters[i].since = start, pos.since
	}
	// The first read is sent after the position was taken.
	f.mu.Lock()
	f.need = max(f.need, s.stamp())
	f.mu.Unlock()
	f.status = s.nc.StatusChanged(nats.CONNECTED)
	f.timer = time.NewTimer(s.cfg.Poll)
	return f, nil
}

// Stop ends the follower: Next returns ErrStopped.
func (f *Follower) Stop() {
	f.once.Do(func() {
		close(f.done)
		for i := range f.listening {
			f.src.wakes.unlisten(f.filters[i].subject, f, i)
		}
		if f.status != nil {
			f.src.nc.RemoveStatusListener(f.status)
		}
		if f.timer != nil {
			f.timer.Stop()
		}
	})
}

// Next returns the next event, blocking until there is one, ctx ends or
// the follower stops. A read that fails (the stream is unreachable for a
// while) is retried; Next does not return it.
func (f *Follower) Next(ctx context.Context) (*Event, error) {
	for {
		if len(f.ready) > 0 {
			e := f.ready[0]
			f.ready[0] = nil
			f.ready = f.ready[1:]
			return e, nil
		}
		select {
		case <-f.done:
			return nil, ErrStopped
		default:
		}
		if f.now {
			f.now = false
			err := f.read(ctx, f.takeDirty())
			switch {
			case ctx.Err() != nil:
				// The read was cut short: the next call reads again.
				f.markAll()
				f.now = true
				return nil, ctx.Err()
			case f.stopped():
				return nil, ErrStopped
			case err != nil:
				f.failures++
				f.markAll()
				f.polling = false
				f.timer.Reset(min(50*time.Millisecond<<min(f.failures, 6), 2*time.Second))
			default:
				f.failures = 0
				f.schedule()
			}
			continue
		}
		if err := f.wait(ctx); err != nil {
			return nil, err
		}
	}
}

func (f *Follower) stopped() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// wait blocks until something calls for a read.
func (f *Follower) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-f.done:
		return ErrStopped
	case <-f.wake:
		f.step = 0
	case s := <-f.status:
		if s != nats.CONNECTED {
			return nil
		}
		// Core messages sent while the connection was down are lost.
		f.markAll()
		f.fresh, f.step = true, 0
	case <-f.timer.C:
		if f.polling || f.fresh {
			f.markAll()
		} else {
			f.markPending()
		}
	}
	f.now = true
	return nil
}

// schedule sets the timer after a read: the next retry while an announced
// event is not read yet (or the follower has just started), else a poll.
func (f *Follower) schedule() {
	f.mu.Lock()
	waiting := len(f.pending) > 0
	f.mu.Unlock()
	if (waiting || f.fresh) && f.step < len(retries) {
		f.polling = false
		f.timer.Reset(retries[f.step])
		f.step++
		return
	}
	// The announced events that never came were not stored (a failed or
	// duplicate publish).
	f.mu.Lock()
	clear(f.pending)
	f.mu.Unlock()
	f.fresh, f.polling = false, true
	f.timer.Reset(f.src.cfg.Poll)
}

// woken notes a core message with message id id on filter i's subject.
func (f *Follower) woken(i int, id string) {
	f.mu.Lock()
	f.dirty[i] = true
	f.need = max(f.need, f.src.stamp())
	if id == "" {
		f.anon++
		id = "\x00" + strconv.FormatUint(f.anon, 10)
	}
	if !f.recent.has(id) && len(f.pending) < maxPending {
		f.pending[id] = i
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *Follower) takeDirty() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var which []int
	for i, d := range f.dirty {
		if d {
			which = append(which, i)
			f.dirty[i] = false
		}
	}
	return which
}

func (f *Follower) markAll() {
	f.mu.Lock()
	for i := range f.dirty {
		f.dirty[i] = true
	}
	f.mu.Unlock()
}

func (f *Follower) markPending() {
	f.mu.Lock()
	for _, i := range f.pending {
		f.dirty[i] = true
	}
	f.mu.Unlock()
}

func (f *Follower) markDirty(i int) {
	f.mu.Lock()
	f.dirty[i] = true
	f.mu.Unlock()
	f.now = true
}

// read reads the filters in which from their positions and queues what it
// finds in stream order. With several filters, every other filter is read
// (again) after the first pass unless it already reached the newest event
// found: an event of another filter stored before that one is then found
// too, and nothing is told out of order.
func (f *Follower) read(ctx context.Context, which []int) error {
	if len(which) == 0 {
		return nil
	}
	got := make([][]*Event, len(f.filters))
	more := make([]bool, len(f.filters))
	f.mu.Lock()
	need := f.need
	f.mu.Unlock()
	// answered is the newest read an answer came from: the follower's next
	// read must be newer.
	var top, answered uint64
	defer func() {
		f.mu.Lock()
		f.need = max(f.need, answered)
		f.mu.Unlock()
	}()
	for _, i := range which {
		evs, m, from, err := f.fetch(ctx, i, need)
		if err != nil {
			return err
		}
		answered = max(answered, from)
		got[i], more[i] = evs, m
		if n := len(evs); n > 0 {
			top = max(top, evs[n-1].Seq)
		}
	}
	if top == 0 {
		return nil
	}
	if len(f.filters) > 1 {
		// Read again means a read sent after the first pass's answers.
		again := f.src.stamp()
		for i := range f.filters {
			if more[i] || (len(got[i]) > 0 && got[i][len(got[i])-1].Seq >= top) {
				continue
			}
			evs, m, from, err := f.fetch(ctx, i, again)
			if err != nil {
				return err
			}
			got[i], more[i] = evs, m
			answered = max(answered, from)
		}
	}
	// A filter with more to read than one answer holds is known only up to
	// its last event; nothing past it is told yet.
	bound := top
	for i := range f.filters {
		if more[i] && len(got[i]) > 0 {
			bound = min(bound, got[i][len(got[i])-1].Seq)
		}
	}
	var out []*Event
	for i := range f.filters {
		for _, e := range got[i] {
			if e.Seq > bound {
				f.markDirty(i)
				break
			}
			f.filters[i].pos, f.filters[i].since = e.Seq, time.Time{}
			out = append(out, e)
		}
		if more[i] {
			f.markDirty(i)
		}
	}
	slices.SortFunc(out, func(a, b *Event) int { return cmp.Compare(a.Seq, b.Seq) })
	out = slices.CompactFunc(out, func(a, b *Event) bool { return a.Seq == b.Seq })
	f.mu.Lock()
	for _, e := range out {
		if id := e.Header.Get(hdrMsgID); id != "" {
			delete(f.pending, id)
			f.recent.add(id)
		}
	}
	f.mu.Unlock()
	f.ready = append(f.ready, out...)
	return nil
}

// recentIDs remembers the last few ids added.
type recentIDs struct {
	ids  [128]string
	next int
	set  map[string]bool
}

func (r *recentIDs) add(id string) {
	if r.set == nil {
		r.set = map[string]bool{}
	}
	delete(r.set, r.ids[r.next])
	r.ids[r.next] = id
	r.set[id] = true
	r.next = (r.next + 1) % len(r.ids)
}

func (r *recentIDs) has(id string) bool { return r.set[id] }
