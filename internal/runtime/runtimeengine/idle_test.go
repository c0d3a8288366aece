package runtimeengine

import (
	"testing"
	"time"
)

// TestIdleTrim_OnlyOnceNoTaskRanForTheWholeWait: the heap is returned after
// the last task ended and IdleTrim passed, never while a task runs, and a
// task that starts within the wait calls the trim off.
func TestIdleTrim_OnlyOnceNoTaskRanForTheWholeWait(t *testing.T) {
	trims := make(chan time.Time, 8)
	c := New(Config{IdleTrim: 50 * time.Millisecond, trim: func() { trims <- time.Now() }})

	// A task that ends arms the trim; it fires after the wait.
	c.track(&task{id: "a"})
	c.untrack("a")
	ended := time.Now()
	select {
	case at := <-trims:
		if at.Sub(ended) < 50*time.Millisecond {
			t.Fatalf("trimmed %v after the task ended, before the idle wait", at.Sub(ended))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no trim after the runtime went idle")
	}

	// A task that starts within the wait calls it off, and one that is
	// still running keeps it off, even when an earlier timer fires late.
	c.track(&task{id: "b"})
	c.untrack("b")
	c.mu.Lock()
	stale := c.idleGen
	c.mu.Unlock()
	c.track(&task{id: "c"})
	c.trimIfIdle(stale)
	c.track(&task{id: "d"})
	c.untrack("d")
	c.mu.Lock()
	current := c.idleGen
	c.mu.Unlock()
	c.trimIfIdle(current) // "c" still runs
	select {
	case <-trims:
		t.Fatal("trimmed while a task was running")
	default:
	}

	// When the last one ends, the trim comes.
	c.untrack("c")
	select {
	case <-trims:
	case <-time.After(5 * time.Second):
		t.Fatal("no trim after the last task ended")
	}
}

// TestIdleTrim_NegativeNeverTrims: IdleTrim < 0 turns trimming off.
func TestIdleTrim_NegativeNeverTrims(t *testing.T) {
	c := New(Config{IdleTrim: -1, trim: func() { t.Error("trimmed with IdleTrim < 0") }})
	c.track(&task{id: "a"})
	c.untrack("a")
	c.mu.Lock()
	armed := c.idleTimer != nil
	c.mu.Unlock()
	if armed {
		t.Fatal("a trim was scheduled with IdleTrim < 0")
	}
}
