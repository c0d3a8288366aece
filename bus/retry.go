package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Store calls ride out a leader election: when a node is lost, the streams
// it led have no leader for a few seconds, and JetStream answers "no
// responders", "cluster not available" or nothing at all. Such a call is
// tried again until RetryBudget has passed (or the caller's context ends),
// and then reported as mesh UNAVAILABLE, which the endpoints answer with 503
// and Retry-After: nothing was stored, the caller may try again.
const (
	// RetryBudget bounds how long one store call is retried. It is well
	// inside DefaultCallTimeout, so the caller hears UNAVAILABLE rather than
	// a timeout of its own.
	RetryBudget = 5 * time.Second
	// attemptTimeout bounds one try: a request no node answers (the stream
	// has no leader) must not use up the whole budget.
	attemptTimeout = 2 * time.Second
	maxRetryWait   = 500 * time.Millisecond
)

// Transient reports whether err is one JetStream gives while a leader is
// being elected or a node is lost: the call may succeed if tried again.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if definitelyNotDone(err) {
		return true
	}
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected)
}

// definitelyNotDone reports whether err says the request was not carried
// out (nobody took it, or JetStream refused it for want of a leader), as
// opposed to a timeout after which it may have been.
func definitelyNotDone(err error) bool {
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.Code == 503
}

// StoreFailed is the error a service answers when a write to the platform's
// store failed (what names the write): a *mesh.Error passes; a failure the
// store may not have while it elects a leader or replaces a node, or a store
// with no room left for it, is UNAVAILABLE (the caller retries later), never
// an internal error the caller cannot act on.
func StoreFailed(what string, err error) error {
	var me *mesh.Error
	if err == nil || errors.As(err, &me) {
		return err
	}
	// JetStream answers 503 for a store with no room too (its stream's or
	// account's limits, or the server's storage): Transient covers it.
	if Transient(err) {
		return unavailable(what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// unavailable is the error of a call that ran out of retries.
func unavailable(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", mesh.Errorf(mesh.CodeUnavailable, "the platform's store is not available right now (a node was lost or is being replaced, or the region that holds the record cannot be reached); retry shortly"), what, err)
}

// retry runs try until it succeeds, fails in a way retrying cannot help, or
// the budget is spent. Each try gets at most attemptTimeout.
func retry(ctx context.Context, what string, try func(ctx context.Context) error) error {
	deadline := time.Now().Add(RetryBudget)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	b := atLeast(25*time.Millisecond, maxRetryWait)
	for {
		actx, cancel := context.WithTimeout(ctx, min(attemptTimeout, max(time.Until(deadline), time.Millisecond)))
		err := try(actx)
		cancel()
		if err == nil || !Transient(err) {
			return err
		}
		if ctx.Err() != nil {
			return unavailable(what, err)
		}
		wait := b.Next()
		if time.Until(deadline) < wait {
			return unavailable(what, err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return unavailable(what, err)
		}
	}
}
