// Package runtimeengine is the runtime's engine (seed 001 §2.3): it keeps the
// runtime online with heartbeats, claims its agent's task runs over a
// Transport, hands each to the local adapter, renews leases while the adapter
// works, reports progress and the result, and never loses a result: a report
// the platform cannot take goes to the ledger's outbox and is re-sent later.
package runtimeengine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
	"github.com/a2amesh/a2amesh/internal/runtime/toolserver"
	"github.com/a2amesh/a2amesh/internal/workpool"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/rs/zerolog"
)

// Config configures an Engine. Zero values take the documented defaults.
type Config struct {
	AgentID   string
	RuntimeID string
	Transport Transport
	Adapter   *adapterclient.Client
	// Artifacts materialises artifact write requests with the runtime's credential.
	Artifacts ArtifactWriter
	// Attachments fetches the files stored for a task's input, which are
	// passed inline to the adapter. Nil passes attachments as they are.
	Attachments AttachmentReader
	Ledger      *ledger.Ledger
	// Platform is passed to the adapter in every task (seed 000).
	Platform adapterapi.Platform
	// Instructions are the agent's business instructions, passed to the adapter.
	Instructions string
	// FreshInstructions asks the platform for the agent's instructions
	// (Transport.Hello) before each task, so that instructions edited while
	// the runtime runs reach the next task; Instructions is then only the
	// fallback when the platform does not answer. False (the default) sends
	// Instructions as they are.
	FreshInstructions bool
	// Concurrency is how many runs are worked on at once. Default 1 (an
	// adapter runs one task at a time, seed 001 §2.5).
	Concurrency int
	// TaskTimeout bounds one adapter call. Default 10 minutes.
	TaskTimeout time.Duration
	// AdapterWait is how long claiming pauses while the local adapter does
	// not answer GET /health (a restart or an upgrade). After it the runtime
	// claims again and fails the runs it cannot deliver, as seed 000 says.
	// Default 1 minute; negative pauses for as long as the adapter is gone.
	AdapterWait time.Duration
	// DrainGrace is how long a stopping runtime lets running tasks finish
	// before failing them. Default 30s.
	DrainGrace time.Duration
	// HeartbeatInterval defaults to a third of the heartbeat timeout (120s).
	HeartbeatInterval time.Duration
	// RenewInterval defaults to a third of the lease (60s).
	RenewInterval time.Duration
	// OnHeartbeat is called after each accepted heartbeat (to record it in the profile).
	OnHeartbeat func(at time.Time)
	// CheckCredential asks the platform, over its REST API, whether it still
	// accepts the runtime's credential. It is called when a heartbeat fails
	// for another reason: a NATS server that refuses a revoked credential
	// only drops the connection, and an error from it then is not an answer.
	// Nil skips the check.
	CheckCredential func(ctx context.Context) error
	// IdleTrim is how long the runtime waits without a task before it
	// returns its spare heap to the system (see idle.go). Default 5s;
	// negative never trims.
	IdleTrim time.Duration
	// SealingKey is the runtime's private sealing key (its profile's): it
	// opens the environment variables callers sealed to the runtime, which
	// go to the adapter with their run only. Empty: a run with sealed
	// variables fails with mesh.ReasonSealedForAnotherRuntime.
	SealingKey string
	// Tools serves each run's delegation tools to its host (the adapter
	// gets their address and capability in the run-task request, the
	// capability revoked when the run's turn ends); nil gives none.
	Tools *toolserver.Server
	// Metrics records what the runtime does; nil records nothing.
	Metrics *Metrics
	Logger  zerolog.Logger

	// trim replaces debug.FreeOSMemory in tests.
	trim func()
}

// Defaults of a runtime, which `a2a-runtime start`'s flags show.
const (
	// DefaultConcurrency is how many task runs a runtime works on at once.
	DefaultConcurrency = 1
	// DefaultTaskTimeout bounds one adapter call.
	DefaultTaskTimeout = 10 * time.Minute
	// DefaultAdapterWait is how long a runtime claims nothing while its
	// adapter does not answer, before runs it cannot take fail.
	DefaultAdapterWait = time.Minute
	// DefaultDrainGrace is how long running tasks may finish on stop.
	DefaultDrainGrace = 30 * time.Second
)

func (c *Config) defaults() {
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.TaskTimeout == 0 {
		c.TaskTimeout = DefaultTaskTimeout
	}
	if c.AdapterWait == 0 {
		c.AdapterWait = DefaultAdapterWait
	}
	if c.DrainGrace == 0 {
		c.DrainGrace = DefaultDrainGrace
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = 40 * time.Second
	}
	if c.RenewInterval == 0 {
		c.RenewInterval = 20 * time.Second
	}
	if c.IdleTrim == 0 {
		c.IdleTrim = defaultIdleTrim
	}
}

// ErrReauth is returned by Run when the platform refused the runtime's
// credential: the same agent must be paired again (seed 001 §4.7).
var ErrReauth = errors.New("the platform refused this runtime's credential")

// Engine runs one runtime.
type Engine struct {
	cfg Config
	log zerolog.Logger

	mu      sync.Mutex
	running map[string]*task
	// owed are the runs whose report waits in the outbox: the runtime still
	// holds them, so their leases are renewed with the running ones.
	owed map[string]bool
	// idleTimer trims the heap once no task ran for IdleTrim; idleGen
	// tells a timer that fired late whether it is still the current one.
	idleTimer *time.Timer
	idleGen   uint64
	// adapterDown is set while the local adapter does not answer (see
	// adapter.go); givenBack counts the runs given back because of it.
	adapterDown      bool
	adapterDownSince time.Time
	// adapterSuspect is set when a call to the adapter failed in transport
	// (it may have gone away mid-task): the next claim checks it first.
	adapterSuspect bool
	givenBack      map[string]int

	execCtx    context.Context
	execCancel context.CancelFunc
	fatalOnce  sync.Once
	fatalErr   error
	fatal      chan struct{}
	outboxKick chan struct{}
	// heartbeatKick sends a heartbeat now: the adapter's readiness changed.
	heartbeatKick chan struct{}
	// tracked is signalled when the runtime starts work on a run.
	tracked  chan struct{}
	stopNow  chan struct{}
	stopOnce sync.Once
}

// task is a run being worked on.
type task struct {
	id      string
	attempt int
	cancel  context.CancelCauseFunc
	// answered is set once the adapter has answered: what is left is the
	// report, which nothing on the platform's side can stop.
	answered atomic.Bool
}

// Cancellation causes, which decide whether the run is still reported.
var (
	errCanceledOnPlatform = errors.New("the task run was canceled on the platform")
	errLeaseLost          = errors.New("the platform no longer assigns this task run to this runtime")
	errShutdown           = errors.New("the runtime stopped before the task finished")
	errReauth             = errors.New("the runtime's credential was refused")
)

// New returns an engine.
func New(cfg Config) *Engine {
	cfg.defaults()
	return &Engine{
		cfg: cfg, log: cfg.Logger, running: map[string]*task{}, owed: map[string]bool{}, givenBack: map[string]int{},
		fatal: make(chan struct{}), outboxKick: make(chan struct{}, 1), heartbeatKick: make(chan struct{}, 1), tracked: make(chan struct{}, 1),
		stopNow: make(chan struct{}),
	}
}

// StopNow ends a drain at once: running tasks are aborted and failed.
func (e *Engine) StopNow() { e.stopOnce.Do(func() { close(e.stopNow) }) }

// Run works until ctx ends (then drains) or the credential is refused
// (then returns an error wrapping ErrReauth).
func (e *Engine) Run(ctx context.Context) error {
	e.execCtx, e.execCancel = context.WithCancel(context.WithoutCancel(ctx))
	defer e.execCancel()
	e.record(ledger.Entry{Event: ledger.EventRuntimeStarted, Message: "transport " + e.cfg.Transport.Name()})
	defer e.record(ledger.Entry{Event: ledger.EventRuntimeStopped})

	// What the adapter says of itself (is it up, may connections to it be
	// kept) is known before the first heartbeat and the first claim.
	e.checkAdapter(ctx)
	if err := e.heartbeat(ctx); err != nil && IsAuthError(err) {
		e.fail(err)
	}
	// Start-up (profile, ledger, connection) leaves garbage too.
	e.mu.Lock()
	e.armIdleTrim()
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.cancelIdleTrim()
		e.mu.Unlock()
	}()
	claimCtx, stopClaiming := context.WithCancel(ctx)
	defer stopClaiming()
	var loops, workers sync.WaitGroup
	// The loops keep running while tasks drain: leases stay renewed and
	// cancellations still arrive until the last task has ended.
	for _, loop := range []func(context.Context){e.heartbeatLoop, e.renewLoop, e.cancelLoop, e.outboxLoop} {
		loops.Add(1)
		go func() { defer loops.Done(); loop(e.execCtx) }()
	}
	workers.Add(1)
	go func() { defer workers.Done(); e.dispatch(claimCtx, &workers) }()
	select {
	case <-ctx.Done():
	case <-e.fatal:
	}
	stopClaiming()
	if e.fatalErr == nil {
		e.log.Info().Msg("stopping: no new task runs are claimed; running ones may finish")
	}
	e.drain(&workers)
	e.execCancel()
	loops.Wait()
	if e.fatalErr != nil {
		return e.fatalErr
	}
	e.goodbye()
	return nil
}

// goodbyeTimeout bounds the goodbye of a runtime that is stopping.
const goodbyeTimeout = 2 * time.Second

// goodbye tells the platform that the runtime stops on purpose, so that it
// is shown offline at once rather than after its heartbeat timeout. A
// platform that cannot be told finds out at that timeout, as it does for
// a runtime that was killed.
func (e *Engine) goodbye() {
	ctx, cancel := context.WithTimeout(context.Background(), goodbyeTimeout)
	defer cancel()
	if err := e.cfg.Transport.Goodbye(ctx); err != nil {
		e.log.Debug().Err(err).Msg("goodbye not delivered; the platform shows the runtime offline after its heartbeat timeout")
	}
}

// drain waits for running tasks up to the grace period (or StopNow), then
// aborts what is left; aborted runs are failed with the reason.
func (e *Engine) drain(workers *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { workers.Wait(); close(done) }()
	if n := e.runningCount(); n > 0 && e.fatalErr == nil {
		e.log.Info().Int("running", n).Dur("grace_ms", e.cfg.DrainGrace).Msg("waiting for running tasks")
	}
	timer := time.NewTimer(e.cfg.DrainGrace)
	defer timer.Stop()
	select {
	case <-done:
		return
	case <-timer.C:
	case <-e.stopNow:
	case <-e.fatal:
	}
	cause := errShutdown
	if e.fatalErr != nil {
		cause = errReauth
	}
	e.mu.Lock()
	for _, t := range e.running {
		t.cancel(cause)
	}
	e.mu.Unlock()
	<-done
}

// fail records a refused credential and stops the runtime.
func (e *Engine) fail(err error) {
	e.fatalOnce.Do(func() {
		e.fatalErr = fmt.Errorf("%w (%v); generate a new pairing code for this same agent on the platform and run a2a-runtime pair again: do not create a new agent", ErrReauth, err)
		e.record(ledger.Entry{Event: ledger.EventAuthRejected, Message: err.Error()})
		close(e.fatal)
	})
}

// dispatch asks for work whenever a slot is free, for as many runs as
// slots are free, in one request, and works on each run it gets in a
// goroutine of its own (counted in workers), until ctx ends.
func (e *Engine) dispatch(ctx context.Context, workers *sync.WaitGroup) {
	slots := make(chan struct{}, e.cfg.Concurrency)
	backoff := bus.Backoff{Initial: 500 * time.Millisecond, Max: 15 * time.Second, Jitter: 0.2}
	// A run's goroutine grows its stack through the adapter's client, the
	// ledger and the bus client: kept from one run to the next, it is not
	// grown again for each.
	runners := workpool.New(e.cfg.Concurrency)
	defer runners.Stop()
	for ctx.Err() == nil {
		free, ok := takeFree(ctx, slots)
		if !ok {
			return
		}
		runs, err := e.next(ctx, free, &backoff)
		for range free - len(runs) {
			<-slots
		}
		if err != nil {
			return
		}
		if ctx.Err() != nil {
			// Claimed while stopping: give them back rather than start them.
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			for _, run := range runs {
				_ = e.cfg.Transport.Release(rctx, run)
				<-slots
			}
			cancel()
			return
		}
		for _, run := range runs {
			workers.Add(1)
			runners.Go(func() {
				defer workers.Done()
				defer func() { <-slots }()
				e.execute(run)
			})
		}
	}
}

// takeFree waits for one free slot and takes every other one free now,
// returning how many it took; false when ctx ended first.
func takeFree(ctx context.Context, slots chan struct{}) (int, bool) {
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return 0, false
	}
	free := 1
	for free < cap(slots) {
		select {
		case slots <- struct{}{}:
			free++
		default:
			return free, true
		}
	}
	return free, true
}

// next waits for the adapter and asks for up to n runs. It returns a
// non-nil error only when the engine must stop asking (ctx ended, or the
// credential was refused); other failures are logged and retried after
// backoff (reset after an answer).
func (e *Engine) next(ctx context.Context, n int, backoff *bus.Backoff) ([]*mesh.TaskRun, error) {
	if !e.waitAdapter(ctx) {
		return nil, ctx.Err()
	}
	runs, err := e.cfg.Transport.NextUpTo(ctx, n)
	switch {
	case err != nil && IsAuthError(err):
		e.fail(err)
		return nil, err
	case err != nil:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The platform closes a revoked runtime's connection at once:
		// a heartbeat now (and, if it fails, a credential check) finds
		// out whether that was why, instead of at the next interval.
		e.kickHeartbeat()
		wait := backoff.Next()
		e.log.Warn().Err(err).Dur("retry_in_ms", wait).Msg("cannot claim work; retrying")
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		return nil, nil
	}
	backoff.Reset()
	return runs, nil
}

func (e *Engine) track(t *task) {
	e.mu.Lock()
	e.running[t.id] = t
	e.cancelIdleTrim()
	e.mu.Unlock()
	select {
	case e.tracked <- struct{}{}:
	default:
	}
}

func (e *Engine) untrack(id string) {
	e.mu.Lock()
	delete(e.running, id)
	if len(e.running) == 0 {
		e.armIdleTrim()
	}
	e.mu.Unlock()
}

// heldIDs are the runs whose leases the runtime keeps: those it works on and
// those whose report it owes. Never nil: the platform renews exactly these.
func (e *Engine) heldIDs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]string, 0, len(e.running)+len(e.owed))
	for id := range e.running {
		ids = append(ids, id)
	}
	for id := range e.owed {
		if e.running[id] == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// owe marks runs as owed (their report is in the outbox) or settled.
func (e *Engine) owe(owed bool, ids ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range ids {
		if owed {
			e.owed[id] = true
		} else {
			delete(e.owed, id)
		}
	}
}

func (e *Engine) runningCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.running)
}

func (e *Engine) cancelRun(id string, cause error) bool {
	e.mu.Lock()
	t, ok := e.running[id]
	e.mu.Unlock()
	if !ok || t.answered.Load() {
		// A run whose work is done has nothing left to stop: the platform
		// ended it (often with this very report, whose answer is late),
		// and its report settles the rest.
		return false
	}
	t.cancel(cause)
	return true
}

// record appends to the ledger, entries made together in one write; a
// ledger that cannot be written is logged, never fatal for the task.
func (e *Engine) record(entries ...ledger.Entry) {
	if e.cfg.Ledger == nil || len(entries) == 0 {
		return
	}
	if err := e.cfg.Ledger.Append(entries...); err != nil {
		e.log.Warn().Err(err).Str("event", string(entries[0].Event)).Msg("ledger entry not written")
	}
}
