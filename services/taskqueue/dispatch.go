package taskqueue

import (
	"context"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Dispatch: the run records are the queue. A pending run waits in its
// queue (its agent's, or the delegation service's for a delegated run) in
// the index every copy of the service builds from the runs bucket, and a
// runtime asks for work with a long-poll offer request under its own
// subject. The copy that answers names pending runs, oldest first; the
// runtime claims one, and the claim, a compare-and-set on the record,
// decides. So an offer that is lost, made twice, or made by two copies to
// two runtimes costs nothing but a refused claim, and no queue message can
// go missing, linger or be stale: there is none. Nothing per agent exists
// on the server (no consumer), which is what lets one node hold many
// thousands of idle runtimes.
//
// Two rules keep offers cheap and in order:
//
//   - a run offered by this copy is not offered again by it for
//     Config.OfferHold, unless it is still pending then (its claim was lost);
//   - a run is offered only once the event of its pending state is stored,
//     so its claimed event can never be stored before the event that made
//     it claimable (events of a run stay in order across copies). A run
//     whose event is missing past repairSettle is offered anyway, after
//     publishing its created event if it never had one (its creator died).

// repairSettle is how long a pending run's event may be missing before the
// run is offered without it (see above).
const repairSettle = 5 * time.Second

// offered holds the runs this copy offered and when it may offer them again.
type offered struct {
	mu    sync.Mutex
	until map[string]time.Time
}

func (o *offered) held(id string, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return now.Before(o.until[id])
}

func (o *offered) hold(id string, until time.Time) {
	o.mu.Lock()
	if o.until == nil {
		o.until = map[string]time.Time{}
	}
	o.until[id] = until
	o.mu.Unlock()
}

func (o *offered) forget(id string) {
	o.mu.Lock()
	delete(o.until, id)
	o.mu.Unlock()
}

// announced holds, per run, the newest revision whose event is known to be
// stored.
type announced struct {
	mu  sync.Mutex
	rev map[string]uint64
}

func (a *announced) mark(id string, rev uint64) {
	a.mu.Lock()
	if a.rev == nil {
		a.rev = map[string]uint64{}
	}
	if rev > a.rev[id] {
		a.rev[id] = rev
	}
	a.mu.Unlock()
}

func (a *announced) has(id string, rev uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rev[id] >= rev
}

func (a *announced) forget(id string) {
	a.mu.Lock()
	delete(a.rev, id)
	a.mu.Unlock()
}

// onRunChange keeps the index and the offer bookkeeping in step with the
// runs bucket.
func (s *Service) onRunChange(id string, p **summary) {
	s.index.onChange(id, p)
	if p == nil || (*p).status != mesh.StatusPending {
		s.offered.forget(id)
	}
	if p == nil || (*p).status.Terminal() {
		s.announced.forget(id)
	}
}

// publishEvent stores an event and notes, for a run's, that it is stored:
// a pending run waiting for it may be offered now.
func (s *Service) publishEvent(ctx context.Context, ev bus.Event) error {
	err := s.events.Publish(ctx, ev)
	if err == nil && ev.Kind == mesh.KindTaskRun {
		s.announced.mark(ev.Subject, ev.Sequence)
		if q, ok := s.index.queueOfRun(ev.Subject); ok {
			s.index.wake(q)
		}
	}
	return err
}

// checkOffer checks an offer request, whose wait may be up
// to maxWait.
func checkOffer(in *meshapi.OfferRequest, maxWait time.Duration) error {
	if in.Wait < 0 || in.Wait > maxWait {
		return mesh.Errorf(mesh.CodeInvalidRequest, "wait must be between 0 and %s", maxWait)
	}
	if in.Max < 0 || in.Max > meshapi.MaxOffers {
		return mesh.Errorf(mesh.CodeInvalidRequest, "max must be between 0 and %d", meshapi.MaxOffers)
	}
	if in.Claim && in.Recover {
		return mesh.Errorf(mesh.CodeInvalidRequest, "claim and recover do not go together")
	}
	return checkKey(in.Key, in.Claim || in.Recover)
}

// waitForOffers is offer for a request of who (a runtime, or the
// delegation service), counted against the requests who may have waiting.
func (s *Service) waitForOffers(ctx context.Context, who, q string, n int, wait time.Duration) ([]meshapi.Offer, error) {
	release, err := s.waiters.admit(who)
	if err != nil {
		return nil, err
	}
	defer release()
	return s.offer(ctx, q, n, wait), nil
}

// offer waits up to wait for pending runs in queue q and names up to n of
// them, oldest first. It returns none when the wait ends first, ctx ends,
// or the service stops.
func (s *Service) offer(ctx context.Context, q string, n int, wait time.Duration) []meshapi.Offer {
	offers, woken := s.takeOffers(ctx, q, n)
	if len(offers) > 0 {
		return offers
	}
	// Even a request that does not wait gives this copy's view of the runs
	// bucket a moment: a run another copy created just before is on its way.
	timer := time.NewTimer(max(wait, minOfferWait))
	defer timer.Stop()
	if s.offersWaiting != nil {
		waiter := "runtime"
		if q == delegationQueue {
			waiter = "delegation"
		}
		g := s.offersWaiting.WithLabelValues(waiter)
		g.Inc()
		defer g.Dec()
	}
	for {
		select {
		case <-woken:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return nil
		case <-s.stopped:
			return nil
		}
		if offers, woken = s.takeOffers(ctx, q, n); len(offers) > 0 {
			return offers
		}
	}
}

// minOfferWait is the shortest an offer request waits.
const minOfferWait = 100 * time.Millisecond

// takeOffers names up to n pending runs of queue q that this copy may
// offer now, and holds them back from other offers for Config.OfferHold.
func (s *Service) takeOffers(ctx context.Context, q string, n int) ([]meshapi.Offer, <-chan struct{}) {
	now := time.Now()
	// A few more than asked: some may not be offerable yet.
	candidates, woken := s.index.pendingIn(q, n+8, func(id string) bool { return s.offered.held(id, now) })
	var offers []meshapi.Offer
	for _, c := range candidates {
		if len(offers) == n {
			break
		}
		if !s.offerable(ctx, c, now) {
			continue
		}
		s.offered.hold(c.id, now.Add(s.cfg.OfferHold))
		// Looked at again when the hold ends, in case no claim came.
		time.AfterFunc(s.cfg.OfferHold, func() { s.index.wake(q) })
		offers = append(offers, meshapi.Offer{TaskRunID: c.id, Attempt: c.attempt + 1})
	}
	return offers, woken
}

// offerable reports whether the event of the run's pending state is stored
// (see the rules above), repairing a run that never had its created event.
func (s *Service) offerable(ctx context.Context, c summary, now time.Time) bool {
	if s.announced.has(c.id, c.rev) {
		return true
	}
	if s.outbox.holds(c.id) {
		// Its event is on its way from this copy, which wakes the queue
		// once it is stored; the recheck covers an event given up on.
		s.recheck(queueOf(&c), time.Second)
		return false
	}
	seq, err := s.events.LastSequence(ctx, c.agentID, mesh.KindTaskRun, c.id)
	if err == nil && seq >= c.rev {
		s.announced.mark(c.id, seq)
		return true
	}
	if now.Sub(c.updatedAt) < repairSettle {
		// Its event is on its way from the copy that made the change.
		s.recheck(queueOf(&c), 20*time.Millisecond)
		return false
	}
	if err == nil && seq == 0 && c.attempt == 0 {
		s.repairCreated(ctx, c.id)
	}
	return true
}

// recheck wakes queue q's waiters after d, for a run not yet offerable
// whose event this copy may not hear of (another copy stores it, or it
// is given up on). One recheck per queue is pending at a time.
func (s *Service) recheck(q string, d time.Duration) {
	s.rechecksMu.Lock()
	defer s.rechecksMu.Unlock()
	if s.rechecks[q] {
		return
	}
	if s.rechecks == nil {
		s.rechecks = map[string]bool{}
	}
	s.rechecks[q] = true
	time.AfterFunc(d, func() {
		s.rechecksMu.Lock()
		delete(s.rechecks, q)
		s.rechecksMu.Unlock()
		s.index.wake(q)
	})
}

// repairCreated publishes the created event of a pending run that has
// none: its creator stored it and died before announcing it.
func (s *Service) repairCreated(ctx context.Context, runID string) {
	unlock := s.locks.lock(runID)
	run, err := s.getRun(ctx, runID)
	var created *outgoing
	if err == nil {
		created = s.announceCreated(ctx, run)
	}
	unlock()
	if created != nil {
		created.wait(ctx)
	}
}

// maxWaiting bounds the requests for work one runtime may have waiting in
// one copy: a runtime sends one per free slot, and requests that wait are
// not bounded by the service's concurrency (bus.Endpoint.Waits).
const maxWaiting = 256

// waiters counts requests that wait (for work, or for cancels), per
// runtime.
type waiters struct {
	// about says what the requests wait for ("for work"); default "for work".
	about string
	mu    sync.Mutex
	n     map[string]int
}

func (w *waiters) what() string {
	if w.about == "" {
		return "for work"
	}
	return w.about
}

// admit counts one more waiting request of who, or refuses it when who
// has maxWaiting already; release uncounts it.
func (w *waiters) admit(who string) (release func(), err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n[who] >= maxWaiting {
		return nil, mesh.Errorf(mesh.CodeRateLimited, "too many requests %s waiting (at most %d at once)", w.what(), maxWaiting)
	}
	if w.n == nil {
		w.n = map[string]int{}
	}
	w.n[who]++
	return func() {
		w.mu.Lock()
		if w.n[who]--; w.n[who] == 0 {
			delete(w.n, who)
		}
		w.mu.Unlock()
	}, nil
}
