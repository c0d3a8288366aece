package runfollow

import "time"

// Position is where a follower starts: after a stream sequence, at a time,
// or with the events stored from now on. The zero Position is the start of
// the stream.
type Position struct {
	after uint64
	since time.Time
	now   bool
}

// After starts after the event with stream sequence seq (an Event's Seq a
// reader sent back), so a reader that reconnects misses nothing.
func After(seq uint64) Position { return Position{after: seq} }

// Since starts with the first event stored at or after t.
func Since(t time.Time) Position { return Position{since: t} }

// Now starts with the events stored after Follow returns. A reader reads
// the state of what it follows after that, so no change falls between.
func Now() Position { return Position{now: true} }
