// Package workpool runs short jobs on goroutines kept from one job to the
// next, so their stacks, grown by the first jobs, are not grown again for
// each one.
package workpool

import (
	"sync"
	"sync/atomic"
)

// Pool runs jobs on goroutines kept from one job to the next. A bus
// handler's goroutine grows its stack through the bus client, the store
// and JSON; a new goroutine per job grows it anew, copying it each time
// (stack copies were 5-7 % of the platform's CPU in the task-run cycle and
// in a burst of 10,000 dispatches). Up to maxIdle goroutines wait for the
// next job; when none waits, another is started, and one finding maxIdle
// already waiting ends. A job never waits for a goroutine.
type Pool struct {
	work    chan func()
	idle    atomic.Int32
	maxIdle int32
	done    chan struct{}
	once    sync.Once
}

// New returns a pool keeping up to maxIdle goroutines waiting.
func New(maxIdle int) *Pool {
	return &Pool{work: make(chan func()), maxIdle: int32(maxIdle), done: make(chan struct{})}
}

// Go runs f on a waiting goroutine, or a new one.
func (w *Pool) Go(f func()) {
	select {
	case w.work <- f:
	default:
		go w.loop(f)
	}
}

func (w *Pool) loop(f func()) {
	for {
		f()
		if w.idle.Add(1) > w.maxIdle {
			w.idle.Add(-1)
			return
		}
		select {
		case f = <-w.work:
			w.idle.Add(-1)
		case <-w.done:
			w.idle.Add(-1)
			return
		}
	}
}

// Stop ends the waiting goroutines; a job given to Go later still runs.
func (w *Pool) Stop() { w.once.Do(func() { close(w.done) }) }
