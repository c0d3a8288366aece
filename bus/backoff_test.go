package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
)

func TestBackoff_NextDoublesToMaxAndResets(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name string
		b    bus.Backoff
		want []time.Duration
	}{
		{"doubles by default", bus.Backoff{Initial: 50 * ms, Max: time.Second},
			[]time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second}},
		{"another factor", bus.Backoff{Initial: 10 * ms, Max: 100 * ms, Factor: 3},
			[]time.Duration{10 * ms, 30 * ms, 90 * ms, 100 * ms, 100 * ms}},
		{"max equal to initial is constant", bus.Backoff{Initial: time.Second, Max: time.Second},
			[]time.Duration{time.Second, time.Second, time.Second}},
		{"no max is constant", bus.Backoff{Initial: time.Second},
			[]time.Duration{time.Second, time.Second}},
		{"max below initial caps it", bus.Backoff{Initial: time.Second, Max: 300 * ms},
			[]time.Duration{300 * ms, 300 * ms}},
		{"a factor of one does not grow", bus.Backoff{Initial: 5 * ms, Max: time.Second, Factor: 1},
			[]time.Duration{5 * ms, 5 * ms, 5 * ms}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b
			for round := range 2 {
				for i, want := range tc.want {
					if got := b.Next(); got != want {
						t.Fatalf("round %d, try %d: Next() = %v, want %v", round, i, got, want)
					}
				}
				b.Reset()
			}
		})
	}
}

func TestBackoff_DelayIsNextWithoutCounting(t *testing.T) {
	b := bus.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second}
	for attempt, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		if got := b.Delay(attempt); got != want {
			t.Errorf("Delay(%d) = %v, want %v", attempt, got, want)
		}
	}
	if got := b.Next(); got != 100*time.Millisecond {
		t.Errorf("Next() after Delay = %v: Delay counted a try", got)
	}
	if got := b.Delay(1000); got != 5*time.Second {
		t.Errorf("Delay(1000) = %v, want the cap", got)
	}
}

func TestBackoff_JitterStaysWithinItsFraction(t *testing.T) {
	b := bus.Backoff{Initial: 100 * time.Millisecond, Max: 400 * time.Millisecond, Jitter: 0.2}
	bases := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}
	for attempt, base := range bases {
		lo, hi := base-base/5, base+base/5
		seen := map[time.Duration]bool{}
		for range 200 {
			d := b.Delay(attempt)
			if d < lo || d > hi {
				t.Fatalf("Delay(%d) = %v, outside [%v, %v]", attempt, d, lo, hi)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Errorf("Delay(%d) gave one value in 200 draws: no jitter", attempt)
		}
	}
}

func TestBackoff_SleepEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := bus.Backoff{Initial: time.Hour, Max: 4 * time.Hour}
	if err := b.Sleep(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on an ended context = %v, want context.Canceled", err)
	}
	if got := b.Next(); got != 2*time.Hour {
		t.Errorf("Next() = %v, want 2h: a cut-short sleep counts its try", got)
	}
}

func TestBackoff_SleepWaitsTheDelay(t *testing.T) {
	b := bus.Backoff{Initial: 20 * time.Millisecond, Max: time.Second}
	start := time.Now()
	if err := b.Sleep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Errorf("Sleep returned after %v, before its delay", waited)
	}
	if got := b.Next(); got != 40*time.Millisecond {
		t.Errorf("Next() after one Sleep = %v, want the second delay", got)
	}
}
