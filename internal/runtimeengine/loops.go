package runtimeengine

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/ledger"
	"github.com/a2amesh/a2amesh/meshapi"
)

// kickHeartbeat asks the heartbeat loop to send one now.
func (c *Engine) kickHeartbeat() {
	select {
	case c.heartbeatKick <- struct{}{}:
	default:
	}
}

// heartbeat sends one heartbeat with the runs being worked on.
func (c *Engine) heartbeat(ctx context.Context) error {
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := c.cfg.Transport.Heartbeat(hctx, meshapi.HeartbeatRequest{RunningTaskRunIDs: c.heldIDs(), AdapterUnreachable: !c.AdapterReady()})
	if err == nil && c.cfg.OnHeartbeat != nil {
		c.cfg.OnHeartbeat(time.Now().UTC())
	}
	return err
}

func (c *Engine) heartbeatLoop(ctx context.Context) {
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(bus.Jitter(c.cfg.HeartbeatInterval, 0.1)):
		case <-c.heartbeatKick:
		}
		c.checkAdapter(ctx)
		err := c.heartbeat(ctx)
		switch {
		case err == nil:
			if failing {
				c.log.Info().Msg("platform reachable again; heartbeats resumed")
			}
			failing = false
		case IsAuthError(err):
			c.fail(err)
			return
		case ctx.Err() != nil:
			return
		default:
			c.cfg.Metrics.heartbeatFailed()
			if !failing {
				c.log.Warn().Err(err).Msg("heartbeat failed; retrying")
				c.record(ledger.Entry{Event: ledger.EventHeartbeatFailed, Message: err.Error()})
			}
			failing = true
			if err := c.checkCredential(ctx); IsAuthError(err) {
				c.fail(err)
				return
			}
		}
	}
}

// checkCredential asks the platform whether it still accepts the credential
// (nil when it does, or when it cannot be asked).
func (c *Engine) checkCredential(ctx context.Context) error {
	if c.cfg.CheckCredential == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.cfg.CheckCredential(cctx)
}

// renewLoop keeps the leases of the runs the runtime holds and stops work on
// runs the platform no longer assigns to this runtime.
func (c *Engine) renewLoop(ctx context.Context) {
	wait := c.cfg.RenewInterval
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(bus.Jitter(wait, 0.1)):
		}
		wait = c.cfg.RenewInterval
		ids := c.heldIDs()
		if len(ids) == 0 {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		lost, err := c.cfg.Transport.Renew(rctx, ids)
		cancel()
		if err != nil {
			if IsAuthError(err) {
				c.fail(err)
				return
			}
			c.log.Warn().Err(err).Msg("lease renewal failed; retrying")
			// Not at the next interval: two missed intervals are most
			// of a lease.
			wait = min(c.cfg.RenewInterval, time.Second)
		}
		for _, id := range lost {
			if c.cancelRun(id, errLeaseLost) {
				c.log.Warn().Str("task_run_id", id).Msg("task run no longer assigned to this runtime; stopping it")
			}
		}
	}
}

// cancelLoop aborts runs canceled on the platform, as the transport tells
// of them: on its Canceled channel, or, for a CancelWaiter, in answer to a
// request that waits for them, which the runtime keeps asking while it
// holds runs.
func (c *Engine) cancelLoop(ctx context.Context) {
	if w, ok := c.cfg.Transport.(CancelWaiter); ok {
		c.waitCanceled(ctx, w)
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-c.cfg.Transport.Canceled():
			if c.cancelRun(id, errCanceledOnPlatform) {
				c.log.Info().Str("task_run_id", id).Msg("task run canceled on the platform; stopping it")
			}
		}
	}
}

// waitCanceled keeps a request for cancels waiting while the runtime holds
// runs, and aborts each run it names.
func (c *Engine) waitCanceled(ctx context.Context, w CancelWaiter) {
	// told are the runs already named: a run whose report is still owed
	// stays held, and asking about it again would be answered at once.
	told := map[string]bool{}
	for {
		held := c.heldIDs()
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
			case <-c.tracked:
			}
			continue
		}
		canceled, err := w.WaitCanceled(ctx, ids)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// Lease renewals still report canceled runs lost; a platform
			// that does not answer this request (an older one) is asked
			// again only as often as leases are renewed.
			wait := time.Second
			if errors.Is(err, ErrNoPlatform) {
				wait = c.cfg.RenewInterval
			}
			c.log.Debug().Err(err).Msg("waiting for canceled runs failed; asking again")
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			continue
		}
		for _, id := range canceled {
			told[id] = true
			if c.cancelRun(id, errCanceledOnPlatform) {
				c.log.Info().Str("task_run_id", id).Msg("task run canceled on the platform; stopping it")
			}
		}
	}
}
