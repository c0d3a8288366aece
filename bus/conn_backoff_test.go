package bus

import (
	"testing"
	"time"
)

func TestReconnectBackoff_DrawsFromHalfToWholeDoublingDelayCappedAtMax(t *testing.T) {
	b := reconnectBackoff(2 * time.Second)
	ms := time.Millisecond
	for attempt, d := range []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2000 * ms, 2000 * ms} {
		lo, hi := time.Duration(1<<62), time.Duration(0)
		for range 500 {
			got := b.Delay(attempt)
			lo, hi = min(lo, got), max(hi, got)
		}
		if lo < d/2 || hi > d {
			t.Errorf("attempt %d: delays in [%v, %v], want within [%v, %v]", attempt, lo, hi, d/2, d)
		}
		// 500 uniform draws reach the outer tenths of the range.
		if lo > d/2+d/20 || hi < d-d/20 {
			t.Errorf("attempt %d: delays in [%v, %v] do not span [%v, %v]", attempt, lo, hi, d/2, d)
		}
	}
}

// The store's retries and provisioning wait at least their doubling delay d
// and at most 2d, as they did before they shared Backoff.
func TestAtLeast_DrawsFromWholeToTwiceDoublingDelayCappedAtMax(t *testing.T) {
	b := atLeast(25*time.Millisecond, 500*time.Millisecond)
	ms := time.Millisecond
	for attempt, d := range []time.Duration{25 * ms, 50 * ms, 100 * ms, 200 * ms, 400 * ms, 500 * ms, 500 * ms} {
		lo, hi := time.Duration(1<<62), time.Duration(0)
		for range 500 {
			got := b.Delay(attempt)
			lo, hi = min(lo, got), max(hi, got)
		}
		if lo < d || hi > 2*d {
			t.Errorf("attempt %d: delays in [%v, %v], want within [%v, %v]", attempt, lo, hi, d, 2*d)
		}
		if lo > d+d/10 || hi < 2*d-d/10 {
			t.Errorf("attempt %d: delays in [%v, %v] do not span [%v, %v]", attempt, lo, hi, d, 2*d)
		}
	}
}
