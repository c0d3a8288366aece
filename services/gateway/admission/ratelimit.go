package admission

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter counts each caller's requests to each agent with a token bucket
// (golang.org/x/time/rate): perMinute requests a minute on average, bursts
// of up to perMinute. It lives in the gateway instance's memory, so with n
// gateways behind a balancer a caller may get up to n times the rate; a
// request over the limit is refused before anything is created, so a task
// that was accepted is never dropped.
type limiter struct {
	perMinute int
	mu        sync.Mutex
	buckets   map[string]*bucket
	swept     time.Time
}

type bucket struct {
	lim  *rate.Limiter
	used time.Time
}

func newLimiter(perMinute int) *limiter {
	return &limiter{perMinute: perMinute, buckets: map[string]*bucket{}, swept: time.Now()}
}

// allow takes one request from key's bucket, or says how long until one is
// available.
func (l *limiter) allow(key string) (bool, time.Duration) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	b := l.buckets[key]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(rate.Limit(float64(l.perMinute)/60), l.perMinute)}
		l.buckets[key] = b
	}
	b.used = now
	if b.lim.AllowN(now, 1) {
		return true, 0
	}
	r := b.lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now)
	return false, wait
}

// sweep forgets buckets unused for longer than it takes them to refill: they
// would be full again anyway.
func (l *limiter) sweep(now time.Time) {
	if now.Sub(l.swept) < time.Minute {
		return
	}
	l.swept = now
	for k, b := range l.buckets {
		if now.Sub(b.used) > 2*time.Minute {
			delete(l.buckets, k)
		}
	}
}
