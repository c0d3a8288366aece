package runtimeengine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Every request of a runtime that claims runs (the NATS transport's offer
// and claim_many, the REST pull) carries a key the runtime chose, and the
// task queue keeps the key on the runs it claims for it. When the answer
// does not come (the connection dropped as it crossed, or the store was
// unavailable for longer than the runtime waited), the runtime asks for
// the runs claimed under that key before each request for work, and so
// takes up a run it holds without knowing, rather than leave it claimed by
// nobody until its lease ends. Both transports keep these keys the same
// way, here.

// mayHaveClaimed reports whether a claiming request that failed with err
// may have claimed runs: its answer did not come, or the task queue failed
// while claiming. A refusal (a bad request, a refused credential, a runtime
// offline) is decided before any claim, and a request that was never sent
// (the connection down) claimed nothing: counting those, a runtime
// reconnecting would push the requests that did claim out of what it keeps.
func mayHaveClaimed(err error) bool {
	if bus.NotSent(err) || restclient.NotSent(err) {
		return false
	}
	var e *mesh.Error
	if !errors.As(err, &e) {
		return true
	}
	switch e.Code {
	case mesh.CodeInternal, mesh.CodeUnavailable, mesh.CodeTimeout:
		return true
	}
	return false
}

// maxLost bounds the claiming requests whose answers did not come that
// are kept to ask about.
const maxLost = 16

// lostSlack is how much longer than the task queue's bound on one request
// (meshapi.MaxHandling) a lost request is asked about.
const lostSlack = 5 * time.Second

// lostRecheck bounds the wait of a request for work while a lost answer is
// kept: what the task queue stores under its key after the runtime asked
// (late, while a node is lost, or seen late by the copy that answered) is
// asked for again within moments, well within the run's lease, not once a
// long wait for work ends.
const lostRecheck = 2 * time.Second

// lostIdle is how long the kept lost answers may go unasked about before
// the transport asks on its own and gives their runs back (see sweep).
const lostIdle = 5 * time.Second

// waitFor is how long a request for work may wait: wait, or lostRecheck
// while a lost answer is kept.
func (l *lostClaims) waitFor(wait time.Duration) time.Duration {
	if l.len() > 0 {
		return min(wait, lostRecheck)
	}
	return wait
}

// abandonedFor is how long each heartbeat names a request no longer
// asked about (at most meshapi.MaxAbandonedClaimKeys of them, the newest).
const abandonedFor = 10 * time.Minute

// lostClaims are the claiming requests whose answers did not come.
type lostClaims struct {
	// log tells of the requests kept, of those no longer asked about
	// before they could claim nothing more, and of the runs taken up or
	// given back; via is the transport that asks about them and gives
	// their runs back.
	log zerolog.Logger
	via lostVia
	mu  sync.Mutex
	ls  []*lostAnswer
	// asked is when they were last asked about, or when the first of
	// them was kept.
	asked time.Time
	// swept is closed when sweep has returned (nil: it was not started).
	swept chan struct{}
	// abandoned are the requests no longer asked about, newest last: a
	// claim the store took up later than the task queue's bound (a write
	// committed once a node came back) would stay held by this runtime,
	// which never hears of it, until its lease ended. Each heartbeat names
	// them, and the task queue gives such a run back (see withAbandoned).
	abandoned []abandonedKey
}

// abandonedKey is a request no longer asked about, since at.
type abandonedKey struct {
	key string
	at  time.Time
}

// lostVia is what a transport does for lostClaims.
type lostVia interface {
	// askLost asks the task queue for the runs claimed under key.
	askLost(ctx context.Context, key string) ([]*mesh.TaskRun, error)
	// Release gives a claimed run back to pending.
	Release(ctx context.Context, run *mesh.TaskRun) error
}

// lostAnswer is a claiming request whose answer did not come.
type lostAnswer struct {
	key string
	// until is when the request can claim nothing more.
	until time.Time
	// taken are the runs already recovered under key.
	taken map[string]bool
}

// add notes the claiming request of key, sent at sent, whose answer did
// not come: what it claimed, if anything, is asked for before each request
// for work until it can claim nothing more. That is not the end of its
// wait: while the platform's store is unavailable the task queue goes on
// storing a claim for as long as it works on the request
// (meshapi.MaxHandling).
func (l *lostClaims) add(key string, sent time.Time) {
	kept := l.keep([]*lostAnswer{{key: key, until: sent.Add(meshapi.MaxHandling + lostSlack), taken: map[string]bool{}}})
	l.log.Info().Int("kept", kept).Msg("the answer to a request that may have claimed runs did not arrive: what it claimed is asked for before the next request for work, or given back when the runtime stops")
}

// keep keeps ls with the requests kept already, and returns how many are
// kept then.
func (l *lostClaims) keep(ls []*lostAnswer) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(ls) > 0 && len(l.ls) == 0 {
		// The first kept is as good as asked about now: it is asked
		// about before the next request for work.
		l.asked = time.Now()
	}
	l.ls = append(l.ls, ls...)
	if over := len(l.ls) - maxLost; over > 0 {
		// Runs claimed under the oldest go back to pending at the next
		// heartbeat.
		l.log.Warn().Int("dropped", over).Int("kept", maxLost).Msg("too many requests whose answers did not arrive: runs claimed under the oldest are given back at the next heartbeat")
		l.abandonLocked(l.ls[:over])
		l.ls = l.ls[over:]
	}
	return len(l.ls)
}

// abandonLocked notes requests no longer asked about; l.mu is held.
func (l *lostClaims) abandonLocked(ls []*lostAnswer) {
	now := time.Now()
	for _, a := range ls {
		l.abandoned = append(l.abandoned, abandonedKey{key: a.key, at: now})
	}
	if over := len(l.abandoned) - meshapi.MaxAbandonedClaimKeys; over > 0 {
		l.abandoned = l.abandoned[over:]
	}
}

// withAbandoned is req naming the requests no longer asked about in the
// last abandonedFor: a run the task queue holds for this runtime under one
// of them, and that the runtime neither lists nor took up, was never
// handed to it and never will be, and goes back to pending.
func (l *lostClaims) withAbandoned(req meshapi.HeartbeatRequest) meshapi.HeartbeatRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	since := time.Now().Add(-abandonedFor)
	for len(l.abandoned) > 0 && l.abandoned[0].at.Before(since) {
		l.abandoned = l.abandoned[1:]
	}
	if len(l.abandoned) == 0 {
		return req
	}
	req.AbandonedClaimKeys = make([]string, len(l.abandoned))
	for i, a := range l.abandoned {
		req.AbandonedClaimKeys[i] = a.key
	}
	return req
}

// len is how many requests are kept to ask about.
func (l *lostClaims) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ls)
}

// recover asks, with ask, for the runs claimed under each kept key, and
// returns those not returned before: the runtime holds them now. A request
// is asked about again, the next time, until the task queue has answered
// about it at a time it could claim nothing more; with last, this is the
// last time.
func (l *lostClaims) recover(ctx context.Context, last bool) []*mesh.TaskRun {
	l.mu.Lock()
	ls := l.ls
	l.ls = nil
	if len(ls) > 0 {
		l.asked = time.Now()
	}
	l.mu.Unlock()
	if len(ls) == 0 {
		// The common case, before each request for work.
		return nil
	}
	// Asked all at once: one slow answer (the store electing a leader)
	// does not hold up the others while their runs' leases run.
	type answer struct {
		claimed []*mesh.TaskRun
		err     error
	}
	answers := make([]answer, len(ls))
	var wg sync.WaitGroup
	for i, a := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), meshapi.TryTimeout)
			defer cancel()
			answers[i].claimed, answers[i].err = l.via.askLost(rctx, a.key)
		}()
	}
	wg.Wait()
	var runs []*mesh.TaskRun
	var again, done []*lostAnswer
	for i, a := range ls {
		claimed, err := answers[i].claimed, answers[i].err
		if err == nil {
			for _, run := range claimed {
				if !a.taken[run.ID] {
					a.taken[run.ID] = true
					runs = append(runs, run)
					l.log.Info().Str("task_run_id", run.ID).Msg("took up a run claimed for an answer that did not arrive")
				}
			}
		}
		// A request that can claim nothing more is asked about no more
		// once the task queue has answered after that; an ask that failed
		// (the connection down, the store unavailable) is made again.
		if !last && (err != nil || time.Now().Before(a.until)) {
			again = append(again, a)
		} else {
			done = append(done, a)
		}
	}
	l.mu.Lock()
	l.abandonLocked(done)
	l.mu.Unlock()
	l.keep(again)
	return runs
}

// takeUp recovers the runs claimed under the kept keys (see recover) and
// returns at most n of them, giving the rest back to pending at once. The
// engine asks for as many runs as it has free slots: a run beyond them
// would run past its concurrency (the adapter refuses it), or, kept for
// later, wait with its lease unrenewed. Runs recovered together can be
// more than n when several requests were lost (a node down, each request
// claiming up to the slots free then).
func (l *lostClaims) takeUp(ctx context.Context, n int) []*mesh.TaskRun {
	runs := l.recover(ctx, false)
	if len(runs) <= n {
		return runs
	}
	l.giveBack(ctx, runs[n:])
	return runs[:n]
}

// sweep starts asking about the kept keys on the transport's behalf,
// until stop is closed: a runtime asks about them before each request for
// work, and it requests work only with a free slot. While every slot is
// busy (long tasks, or reports held up as the store elects a leader) a run
// claimed under a kept key would wait unfound, its lease unrenewed, until
// it failed; asked about lostIdle after the last time, it goes back to
// pending instead, for another runtime (or this one, later) to claim.
func (l *lostClaims) sweep(stop <-chan struct{}) {
	l.swept = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-stop
		cancel()
	}()
	go func() {
		defer close(l.swept)
		tick := time.NewTicker(lostRecheck)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if l.idle() {
				l.giveBack(ctx, l.recover(ctx, false))
			}
		}
	}()
}

// idle says whether lost answers are kept and have not been asked about
// for lostIdle.
func (l *lostClaims) idle() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ls) > 0 && time.Since(l.asked) >= lostIdle
}

// giveBackAll recovers the runs claimed under the kept keys one last time
// and gives them all back: the runtime is closing (its sweep, if any, is
// told to stop before).
func (l *lostClaims) giveBackAll() {
	if l.swept != nil {
		<-l.swept
	}
	ctx, cancel := context.WithTimeout(context.Background(), meshapi.TryTimeout)
	defer cancel()
	l.giveBack(ctx, l.recover(ctx, true))
}

// giveBack releases runs claimed for lost answers and not taken up; one
// that cannot be released is left to its lease.
func (l *lostClaims) giveBack(ctx context.Context, runs []*mesh.TaskRun) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), meshapi.TryTimeout)
	defer cancel()
	for _, run := range runs {
		if err := l.via.Release(rctx, run); err != nil {
			l.log.Warn().Err(err).Str("task_run_id", run.ID).Msg("a run claimed for a lost answer is released when its lease ends")
		}
	}
}
