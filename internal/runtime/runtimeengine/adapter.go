package runtimeengine

import (
	"context"
	"errors"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
	"github.com/a2amesh/a2amesh/mesh"
)

// An adapter that is restarted, upgraded or crashed is gone for a moment.
// Tasks claimed meanwhile would all fail with ADAPTER_UNREACHABLE, so the
// runtime asks the adapter's GET /health before each claim and claims
// nothing while it does not answer; a run it claimed just before the adapter
// went away, and could not deliver, goes back to the queue.
const (
	// adapterCheckTimeout bounds one GET /health.
	adapterCheckTimeout = 2 * time.Second
	// adapterBackoffMin and adapterBackoffMax pace the checks of an adapter
	// that does not answer: quickly at first (a restart takes a second),
	// then every few seconds.
	adapterBackoffMin = 200 * time.Millisecond
	adapterBackoffMax = 5 * time.Second
	// maxGiveBacks is how often one run is given back because the adapter
	// could not be reached; the next time it fails (seed 000: the runtime
	// fails a task whose endpoint cannot be reached).
	maxGiveBacks = 3
	// giveBackMargin: a run this close to its deadline is failed rather
	// than given back, so its caller learns why now instead of at the
	// deadline.
	giveBackMargin = 15 * time.Second
)

// EventTaskGivenBack is the ledger entry of a run given back to the queue
// because the adapter could not be reached: it was never started.
const EventTaskGivenBack ledger.Event = "task_given_back"

// AdapterReady reports whether the local adapter answered its last check.
func (e *Engine) AdapterReady() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.adapterDown
}

// waitAdapter returns once the adapter answers GET /health, checking with
// backoff while it does not, or once it has not answered for AdapterWait:
// an adapter gone that long is not restarting, and the runs claimed then
// fail as seed 000 says (once given back maxGiveBacks times). False when
// ctx ended first. An adapter believed up (its last check and its last
// task went well) is not asked again before each claim: that would put a
// round trip in front of every claim; the heartbeat loop checks it, and a
// run it does not receive is given back and marks it down.
func (e *Engine) waitAdapter(ctx context.Context) bool {
	if e.cfg.Adapter == nil {
		return true
	}
	e.mu.Lock()
	trusted := !e.adapterDown && !e.adapterSuspect
	e.mu.Unlock()
	if trusted {
		return true
	}
	backoff := bus.Backoff{Initial: adapterBackoffMin, Max: adapterBackoffMax, Jitter: 0.2}
	for {
		e.checkAdapter(ctx)
		if ctx.Err() != nil {
			return false
		}
		if e.AdapterReady() || e.adapterGaveUp() {
			return true
		}
		if backoff.Sleep(ctx) != nil {
			return false
		}
	}
}

// checkAdapter asks the adapter once, so an idle runtime also notices (and
// its heartbeat reports) an adapter that went away.
func (e *Engine) checkAdapter(ctx context.Context) {
	if e.cfg.Adapter == nil {
		return
	}
	hctx, cancel := context.WithTimeout(ctx, adapterCheckTimeout)
	err := e.cfg.Adapter.Reachable(hctx)
	cancel()
	e.mu.Lock()
	e.adapterSuspect = false
	e.mu.Unlock()
	if ctx.Err() == nil {
		e.setAdapterState(err)
	}
}

// suspectAdapter makes the next claim check the adapter first: a call to
// it failed in transport (err is a transport error, not the adapter's own
// failure answer).
func (e *Engine) suspectAdapter(err error) {
	var f *adapterclient.Failure
	if err == nil || (errors.As(err, &f) && !f.NotDelivered && f.Code != mesh.ReasonAdapterConnectionLost) {
		return
	}
	e.mu.Lock()
	e.adapterSuspect = true
	e.mu.Unlock()
}

// adapterGaveUp reports whether the adapter has been unreachable for longer
// than AdapterWait (a negative AdapterWait waits for ever).
func (e *Engine) adapterGaveUp() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.adapterDown && e.cfg.AdapterWait >= 0 && time.Since(e.adapterDownSince) > e.cfg.AdapterWait
}

// setAdapterState records the result of a check and logs the changes only:
// one line when the adapter goes away, one when it is back.
func (e *Engine) setAdapterState(err error) {
	e.mu.Lock()
	was := e.adapterDown
	e.adapterDown = err != nil
	if err != nil && !was {
		e.adapterDownSince = time.Now()
	}
	e.mu.Unlock()
	switch {
	case err != nil && !was:
		e.log.Warn().Err(err).Str("endpoint", e.cfg.Adapter.Endpoint()).
			Msg("local adapter unreachable: no task runs are claimed until it answers")
		e.cfg.Metrics.adapterReady(false)
		e.kickHeartbeat()
	case err == nil && was:
		e.log.Info().Str("endpoint", e.cfg.Adapter.Endpoint()).Msg("local adapter answering again: claiming task runs")
		e.cfg.Metrics.adapterReady(true)
		e.kickHeartbeat()
	}
}

// giveBack returns a run the adapter never received to the queue, unless it
// was given back often enough already or its deadline is near. It reports
// whether the run was given back; if not, the caller fails it.
func (e *Engine) giveBack(run *mesh.TaskRun, err error) bool {
	var f *adapterclient.Failure
	if !errors.As(err, &f) || !f.NotDelivered {
		return false
	}
	if run.Deadline != nil && time.Until(*run.Deadline) < giveBackMargin {
		return false
	}
	e.mu.Lock()
	n := e.givenBack[run.ID]
	if n >= maxGiveBacks {
		delete(e.givenBack, run.ID)
		e.mu.Unlock()
		return false
	}
	e.givenBack[run.ID] = n + 1
	e.mu.Unlock()
	e.setAdapterState(err)

	ctx, cancel := context.WithTimeout(e.execCtx, 5*time.Second)
	defer cancel()
	if rerr := e.cfg.Transport.Release(ctx, run); rerr != nil {
		e.log.Warn().Err(rerr).Str("task_run_id", run.ID).Msg("task run could not be given back; failing it")
		return false
	}
	e.log.Warn().Str("task_run_id", run.ID).Int("given_back", n+1).Err(err).
		Msg("local adapter unreachable: task run given back to the queue")
	e.cfg.Metrics.taskGivenBack()
	return true
}

// delivered forgets the give-backs of a run the adapter received.
func (e *Engine) delivered(id string) {
	e.mu.Lock()
	delete(e.givenBack, id)
	e.mu.Unlock()
}
