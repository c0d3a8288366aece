package runtimeengine

import (
	"context"
	"slices"
	"sync"
)

// maxCanceledKept bounds the runs a canceledRuns remembers.
const maxCanceledKept = 1024

// canceledRuns are the runs an event stream said were canceled, for a
// transport that hears of cancels that way (HTTP) to answer WaitCanceled as
// one that asks does (NATS). The newest maxCanceledKept are remembered, so
// a run canceled just before the engine holds it is still named when the
// engine asks about it; memory stays bounded however many runs are
// canceled while the runtime holds none.
type canceledRuns struct {
	mu    sync.Mutex
	known map[string]bool
	order []string // known, oldest first
	fresh []string // heard since a wait last took them
	wake  chan struct{}
}

func newCanceledRuns() *canceledRuns {
	return &canceledRuns{known: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// add notes that run id was canceled, and wakes a wait.
func (c *canceledRuns) add(id string) {
	c.mu.Lock()
	if !c.known[id] {
		c.known[id] = true
		c.order = append(c.order, id)
		c.fresh = append(c.fresh, id)
		if len(c.order) > maxCanceledKept {
			delete(c.known, c.order[0])
			c.order = slices.Delete(c.order, 0, 1)
		}
		if len(c.fresh) > maxCanceledKept {
			c.fresh = slices.Delete(c.fresh, 0, 1)
		}
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// wait returns those of ids known to be canceled, and the runs heard of
// since the last wait (which may include runs claimed after ids were
// listed); when there are none, it waits for the next one heard of, or
// for ctx to end.
func (c *canceledRuns) wait(ctx context.Context, ids []string) ([]string, error) {
	for {
		c.mu.Lock()
		named := c.fresh
		c.fresh = nil
		for _, id := range ids {
			if c.known[id] && !slices.Contains(named, id) {
				named = append(named, id)
			}
		}
		c.mu.Unlock()
		if len(named) > 0 {
			return named, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.wake:
		}
	}
}
