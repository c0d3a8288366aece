package runfollow

import (
	"cmp"
	"context"
	"slices"
	"sync"
)

// A direct get costs the server a copy of each event's headers with the
// stream's own added, and the client a parse of them: a hundred followers
// of one subject reading each event for themselves cost a hundred times
// what one read does. So the followers of a subject on one source share
// their reads through its tail:
//
//   - a follower that needs to read takes part in a read of the subject
//     already under way when that read was sent after the follower needed
//     it (it was woken, or its last answer was older) and starts at or
//     before its position; otherwise it sends its own, which others join;
//   - the events the latest reads returned stay in a window, with the stamp
//     of the read that last found the window's end; a follower whose
//     position is in the window takes what follows it from there, and
//     reads only if that read is older than its need.
//
// Every answer a follower gets is what a read of its own, sent after it
// needed one, would have returned, so its order, completeness and retries
// are as if it read alone.

const (
	// maxWindow and maxWindowBytes bound the events a tail keeps.
	maxWindow      = 1024
	maxWindowBytes = 4 << 20
)

// tail is the shared reads of one subject.
type tail struct {
	src     *Source
	subject string

	mu sync.Mutex
	// The window: every event of the subject with a sequence in (lo, hi],
	// in order, when known. asOf is the stamp of the read that last found
	// hi to be the end, more whether it said more events follow.
	known  bool
	lo, hi uint64
	evs    []*Event
	bytes  int
	asOf   uint64
	more   bool
	// reads are the reads under way.
	reads []*dget
}

// next returns the events of the subject after pos as a read sent after
// stamp need would, whether more follow them, and the stamp of the read
// they come from (a later read of the follower must be newer).
func (t *tail) next(ctx context.Context, pos, need uint64) ([]*Event, bool, uint64, error) {
	t.mu.Lock()
	var out []*Event
	if t.known && t.lo <= pos && pos <= t.hi {
		i, _ := slices.BinarySearchFunc(t.evs, pos+1, func(e *Event, seq uint64) int { return cmp.Compare(e.Seq, seq) })
		out = slices.Clone(t.evs[i:])
		if t.asOf > need {
			more, asOf := t.more, t.asOf
			t.mu.Unlock()
			return out, more, asOf, nil
		}
		pos = t.hi
	}
	r := t.joinable(pos+1, need)
	if r == nil {
		var err error
		if r, err = t.start(pos + 1); err != nil {
			t.mu.Unlock()
			return nil, false, 0, err
		}
	}
	t.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, false, 0, ctx.Err()
	}
	if r.err != nil {
		return nil, false, 0, r.err
	}
	for _, e := range r.evs {
		if e.Seq > pos {
			out = append(out, e)
		}
	}
	return out, r.more, r.sent, nil
}

// joinable is a read under way that answers a need from sequence from.
// Called with t.mu held.
func (t *tail) joinable(from, need uint64) *dget {
	for _, r := range t.reads {
		if r.req.Seq <= from && r.sent > need {
			return r
		}
	}
	return nil
}

// start sends a read from sequence from. Called with t.mu held.
func (t *tail) start(from uint64) (*dget, error) {
	r, err := t.src.send(directGet{NextFor: nextFor(t.subject), Batch: t.src.cfg.Batch, MaxBytes: maxReadBytes, Seq: from}, t.ended)
	if err != nil {
		return nil, err
	}
	t.reads = append(t.reads, r)
	return r, nil
}

// ended takes a read that ended off the reads under way, and what it found
// into the window.
func (t *tail) ended(r *dget) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reads = slices.DeleteFunc(t.reads, func(o *dget) bool { return o == r })
	if r.err == nil {
		t.learn(r)
	}
}

// learn takes what a read found into the window. Called with t.mu held.
func (t *tail) learn(r *dget) {
	first := r.req.Seq - 1
	last := first
	if n := len(r.evs); n > 0 {
		last = r.evs[n-1].Seq
	}
	switch {
	case !t.known || first > t.hi || (first <= t.lo && last >= t.hi):
		// No window, one behind the read, or one the read covers.
		t.known, t.lo, t.hi, t.evs, t.bytes = true, first, first, nil, 0
		t.add(r.evs, last)
		t.asOf, t.more = r.sent, r.more
	case first <= t.hi && last > t.hi:
		t.add(r.evs, last)
		t.asOf, t.more = r.sent, r.more
	case first <= t.hi && last == t.hi && r.sent > t.asOf:
		t.asOf, t.more = r.sent, r.more
	}
	t.trim()
}

// add appends the events past the window's end and moves the end to last.
func (t *tail) add(evs []*Event, last uint64) {
	for _, e := range evs {
		if e.Seq > t.hi {
			t.evs = append(t.evs, e)
			t.bytes += len(e.Data)
		}
	}
	t.hi = last
}

// trim drops the window's oldest events past its bounds.
func (t *tail) trim() {
	drop := 0
	for len(t.evs)-drop > maxWindow || (t.bytes > maxWindowBytes && drop < len(t.evs)) {
		t.bytes -= len(t.evs[drop].Data)
		t.lo = t.evs[drop].Seq
		drop++
	}
	if drop > 0 {
		t.evs = slices.Delete(t.evs, 0, drop)
	}
}
