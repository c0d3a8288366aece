package bus

import (
	"math/rand/v2"
	"time"
)

// jitter returns a random duration in [0, d).
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(d)))
}

// Jitter returns d spread by up to ±fraction of itself, for timers that many
// processes run at once (heartbeats, sweeps).
func Jitter(d time.Duration, fraction float64) time.Duration {
	spread := time.Duration(float64(d) * fraction)
	return d - spread + jitter(2*spread+1)
}
