package runtimeengine

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
	"github.com/a2amesh/a2amesh/meshapi"
)

// kickHeartbeat asks the heartbeat loop to send one now.
func (e *Engine) kickHeartbeat() {
	select {
	case e.heartbeatKick <- struct{}{}:
	default:
	}
}

// heartbeat sends one heartbeat with the runs being worked on.
func (e *Engine) heartbeat(ctx context.Context) error {
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := e.cfg.Transport.Heartbeat(hctx, meshapi.HeartbeatRequest{RunningTaskRunIDs: e.heldIDs(), AdapterUnreachable: !e.AdapterReady()})
	if err == nil && e.cfg.OnHeartbeat != nil {
		e.cfg.OnHeartbeat(time.Now().UTC())
	}
	return err
}

func (e *Engine) heartbeatLoop(ctx context.Context) {
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(bus.Jitter(e.cfg.HeartbeatInterval, 0.1)):
		case <-e.heartbeatKick:
		}
		e.checkAdapter(ctx)
		err := e.heartbeat(ctx)
		switch {
		case err == nil:
			if failing {
				e.log.Info().Msg("platform reachable again; heartbeats resumed")
			}
			failing = false
		case IsAuthError(err):
			e.fail(err)
			return
		case ctx.Err() != nil:
			return
		default:
			e.cfg.Metrics.heartbeatFailed()
			if !failing {
				e.log.Warn().Err(err).Msg("heartbeat failed; retrying")
				e.record(ledger.Entry{Event: ledger.EventHeartbeatFailed, Message: err.Error()})
			}
			failing = true
			if err := e.checkCredential(ctx); IsAuthError(err) {
				e.fail(err)
				return
			}
		}
	}
}

// checkCredential asks the platform whether it still accepts the credential
// (nil when it does, or when it cannot be asked).
func (e *Engine) checkCredential(ctx context.Context) error {
	if e.cfg.CheckCredential == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return e.cfg.CheckCredential(cctx)
}

// renewLoop keeps the leases of the runs the runtime holds and stops work on
// runs the platform no longer assigns to this runtime.
func (e *Engine) renewLoop(ctx context.Context) {
	wait := e.cfg.RenewInterval
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(bus.Jitter(wait, 0.1)):
		}
		wait = e.cfg.RenewInterval
		ids := e.heldIDs()
		if len(ids) == 0 {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		lost, err := e.cfg.Transport.Renew(rctx, ids)
		cancel()
		if err != nil {
			if IsAuthError(err) {
				e.fail(err)
				return
			}
			e.log.Warn().Err(err).Msg("lease renewal failed; retrying")
			// Not at the next interval: two missed intervals are most
			// of a lease.
			wait = min(e.cfg.RenewInterval, time.Second)
		}
		for _, id := range lost {
			if e.cancelRun(id, errLeaseLost) {
				e.log.Warn().Str("task_run_id", id).Msg("task run no longer assigned to this runtime; stopping it")
			}
		}
	}
}

// cancelLoop aborts runs canceled on the platform: it keeps the
// transport's wait for cancels (WaitCanceled) going while the runtime holds
// runs, and aborts each run it names.
func (e *Engine) cancelLoop(ctx context.Context) {
	// told are the runs already named: a run whose report is still owed
	// stays held, and asking about it again would be answered at once.
	told := map[string]bool{}
	for {
		held := e.heldIDs()
		ids := held[:0:0]
		for _, id := range held {
			if !told[id] {
				ids = append(ids, id)
			}
		}
		maps.DeleteFunc(told, func(id string, _ bool) bool { return !slices.Contains(held, id) })
		if len(ids) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-e.tracked:
			}
			continue
		}
		canceled, err := e.cfg.Transport.WaitCanceled(ctx, ids)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// Lease renewals still report canceled runs lost; a platform
			// that does not answer this request (an older one) is asked
			// again only as often as leases are renewed.
			wait := time.Second
			if errors.Is(err, ErrNoPlatform) {
				wait = e.cfg.RenewInterval
			}
			e.log.Debug().Err(err).Msg("waiting for canceled runs failed; asking again")
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			continue
		}
		for _, id := range canceled {
			told[id] = true
			if e.cancelRun(id, errCanceledOnPlatform) {
				e.log.Info().Str("task_run_id", id).Msg("task run canceled on the platform; stopping it")
			}
		}
	}
}
