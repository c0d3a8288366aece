package bench

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// latencies collects samples from many goroutines.
type latencies struct {
	mu      sync.Mutex
	samples []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.samples = append(l.samples, d)
	l.mu.Unlock()
}

// Summary is a latency distribution.
type Summary struct {
	Count int     `json:"count"`
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

func (l *latencies) summary() Summary {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := append([]time.Duration(nil), l.samples...)
	if len(s) == 0 {
		return Summary{}
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(p float64) float64 {
		i := int(p * float64(len(s)-1))
		return ms(s[i])
	}
	return Summary{Count: len(s), P50Ms: q(0.50), P90Ms: q(0.90), P99Ms: q(0.99), MaxMs: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (s Summary) String() string {
	return fmt.Sprintf("p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms (n=%d)", s.P50Ms, s.P90Ms, s.P99Ms, s.MaxMs, s.Count)
}
