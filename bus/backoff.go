package bus

import (
	"context"
	"time"
)

// Backoff spaces the tries of something that failed: Initial, then
// multiplied by Factor at each try up to Max, each delay spread by Jitter
// (see [Jitter]) so that many processes retrying together do not do so in
// lockstep. The zero value is not useful; set Initial and Max. A Backoff
// is not safe for concurrent use.
type Backoff struct {
	// Initial is the delay before the first retry.
	Initial time.Duration
	// Max caps the delay before jitter, Initial's too. Zero: Initial, so
	// the delay does not grow.
	Max time.Duration
	// Factor multiplies the delay at each try. Default (zero) 2.
	Factor float64
	// Jitter is the fraction by which each delay is spread either side
	// (see [Jitter]). Zero: no jitter.
	Jitter float64

	attempt int
}

// Next returns the delay before the next try and counts the try.
func (b *Backoff) Next() time.Duration {
	d := b.Delay(b.attempt)
	b.attempt++
	return d
}

// Reset starts again from Initial, after a success.
func (b *Backoff) Reset() { b.attempt = 0 }

// Sleep waits for Next's delay; it returns ctx's error at once if ctx ends
// first. The try is counted either way.
func (b *Backoff) Sleep(ctx context.Context) error {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Delay returns the delay before try attempt+1 (attempt counts from 0),
// without changing b: for callers that keep the count themselves, such as
// a redelivery count or the client's reconnect attempts.
func (b *Backoff) Delay(attempt int) time.Duration {
	return Jitter(b.base(attempt), b.Jitter)
}

// base is the delay of attempt before jitter.
func (b *Backoff) base(attempt int) time.Duration {
	factor := b.Factor
	if factor == 0 {
		factor = 2
	}
	limit := b.Max
	if limit <= 0 {
		limit = b.Initial
	}
	d := b.Initial
	for i := 0; i < attempt && d < limit; i++ {
		next := time.Duration(float64(d) * factor)
		if next <= d { // a factor at or below 1, or overflow
			break
		}
		d = next
	}
	return min(d, limit)
}

// atLeast returns a Backoff whose delays lie between d and 2d, d doubling
// from initial up to max: never shorter than d, spread over the next d so
// that processes retrying together part.
func atLeast(initial, max time.Duration) *Backoff {
	return &Backoff{Initial: initial * 3 / 2, Max: max * 3 / 2, Jitter: 1.0 / 3}
}
