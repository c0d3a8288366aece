package adapter

import (
	"context"
	"slices"
	"sync"
)

// queue lets one task run at a time and up to limit requests wait for their
// turn, first in, first out.
type queue struct {
	limit int

	mu      sync.Mutex
	running bool
	closed  bool
	waiting []chan error
	// idle is closed whenever no task runs.
	idle chan struct{}
}

func newQueue(limit int) *queue {
	idle := make(chan struct{})
	close(idle)
	return &queue{limit: max(limit, 0), idle: idle}
}

// acquire blocks until the caller may run its task, and then the caller must
// call release. It fails at once with ErrQueueFull when every place is taken
// and with ErrShuttingDown after close, and it gives up its place when ctx
// ends.
func (q *queue) acquire(ctx context.Context) error {
	q.mu.Lock()
	switch {
	case q.closed:
		q.mu.Unlock()
		return ErrShuttingDown
	case !q.running:
		q.start()
		q.mu.Unlock()
		return nil
	case len(q.waiting) >= q.limit:
		q.mu.Unlock()
		return ErrQueueFull
	}
	turn := make(chan error, 1)
	q.waiting = append(q.waiting, turn)
	q.mu.Unlock()

	select {
	case err := <-turn:
		return err
	case <-ctx.Done():
	}
	q.mu.Lock()
	i := slices.Index(q.waiting, turn)
	if i >= 0 {
		q.waiting = slices.Delete(q.waiting, i, i+1)
	}
	q.mu.Unlock()
	// The turn may have been handed over just as ctx ended; pass it on.
	if i < 0 {
		if err := <-turn; err == nil {
			q.release()
		}
	}
	return ctx.Err()
}

// release ends the caller's turn and hands it to the first waiter.
func (q *queue) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) > 0 {
		next := q.waiting[0]
		q.waiting = slices.Delete(q.waiting, 0, 1)
		next <- nil
		return
	}
	q.running = false
	close(q.idle)
}

// close refuses waiting and future requests with ErrShuttingDown. The
// running task, if any, carries on.
func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for _, w := range q.waiting {
		w <- ErrShuttingDown
	}
	q.waiting = nil
}

// isClosed reports whether close was called.
func (q *queue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// busy reports whether a task runs.
func (q *queue) busy() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running
}

// idleCh returns a channel closed once no task runs.
func (q *queue) idleCh() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.idle
}

// start marks a task as running; q.mu must be held.
func (q *queue) start() {
	q.running = true
	q.idle = make(chan struct{})
}
