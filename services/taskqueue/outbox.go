package taskqueue

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/workpool"
)

// Publishing a stored change's event is given more time than a store call:
// the change cannot be taken back, and every try carries the same event id,
// so each is a duplicate of any that was stored after all (without an
// acknowledgement) as long as the tries stay inside the stream's duplicate
// window.
const (
	eventBudget = bus.DuplicateWindow / 2
	// eventTryTimeout bounds one try: a publish whose stream leader was lost
	// is never acknowledged, and must not use up the budget.
	eventTryTimeout = 2 * time.Second
)

// outbox publishes the events of stored run changes. A run's events leave
// in the order they were added, which is the order of its revisions (they
// are added under the run's lock); each is retried, away from that lock,
// until the event stream takes it or the event budget is spent. A request
// waits for its own event only as long as its context allows.
type outbox struct {
	publish func(context.Context, bus.Event) error
	log     zerolog.Logger
	// ctx ends when the service stops: no more retries.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// senders run the runs' senders.
	senders *workpool.Pool

	mu sync.Mutex
	// queues holds each run's events not yet published, by run id; a run
	// is here while its sender runs.
	queues map[string][]*outgoing
}

// outgoing is one event in the outbox.
type outgoing struct {
	// ctx carries the change's trace; it is never canceled.
	ctx  context.Context
	ev   bus.Event
	done chan struct{}
}

// idleSenders is how many of the outbox's sender goroutines wait for the
// next run's events (see workpool.Pool).
const idleSenders = 32

func newOutbox(publish func(context.Context, bus.Event) error, log zerolog.Logger) *outbox {
	ctx, cancel := context.WithCancel(context.Background())
	return &outbox{publish: publish, log: log, ctx: ctx, cancel: cancel, senders: workpool.New(idleSenders), queues: map[string][]*outgoing{}}
}

// add queues an event of run ev.Subject. Call it under the run's lock.
func (o *outbox) add(ctx context.Context, ev bus.Event) *outgoing {
	out := &outgoing{ctx: context.WithoutCancel(ctx), ev: ev, done: make(chan struct{})}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ctx.Err() != nil {
		o.log.Error().Ctx(ctx).Str("task_run_id", ev.Subject).Str("type", ev.Type).Msg("task run event not published: the service is stopping")
		close(out.done)
		return out
	}
	q, sending := o.queues[ev.Subject]
	o.queues[ev.Subject] = append(q, out)
	if !sending {
		o.wg.Add(1)
		o.senders.Go(func() { o.send(ev.Subject) })
	}
	return out
}

// wait returns once the event was published (or given up on), or ctx ended.
func (out *outgoing) wait(ctx context.Context) {
	select {
	case <-out.done:
	case <-ctx.Done():
	}
}

// send publishes a run's events one after the other until none is left.
func (o *outbox) send(runID string) {
	defer o.wg.Done()
	for {
		o.mu.Lock()
		q := o.queues[runID]
		if len(q) == 0 {
			delete(o.queues, runID)
			o.mu.Unlock()
			return
		}
		out := q[0]
		o.mu.Unlock()
		o.deliver(out)
		close(out.done)
		o.mu.Lock()
		o.queues[runID] = o.queues[runID][1:]
		o.mu.Unlock()
	}
}

// deliver publishes one event, retrying through leader elections of the
// event stream (see eventBudget); an event given up on is logged.
func (o *outbox) deliver(out *outgoing) {
	deadline := time.Now().Add(eventBudget)
	var err error
	for try := 1; ; try++ {
		tctx, cancel := context.WithTimeout(out.ctx, eventTryTimeout)
		err = o.publish(tctx, out.ev)
		cancel()
		if err == nil {
			return
		}
		if (try >= 3 && !bus.Transient(err)) || time.Now().After(deadline) {
			break
		}
		wait := time.NewTimer(min(time.Duration(try)*50*time.Millisecond, 500*time.Millisecond))
		select {
		case <-o.ctx.Done():
			wait.Stop()
			o.log.Error().Ctx(out.ctx).Err(err).Str("task_run_id", out.ev.Subject).Str("type", out.ev.Type).Msg("task run event not published: the service stopped")
			return
		case <-wait.C:
		}
	}
	o.log.Error().Ctx(out.ctx).Err(err).Str("task_run_id", out.ev.Subject).Str("type", out.ev.Type).Msg("task run event not published")
}

// stop ends the retries and waits for the senders: each publishes what it
// can at once, and logs the rest.
func (o *outbox) stop() {
	o.mu.Lock()
	o.cancel()
	o.mu.Unlock()
	o.wg.Wait()
	o.senders.Stop()
}

// holds reports whether events of run id wait here to be published.
func (o *outbox) holds(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.queues[id]
	return ok
}
