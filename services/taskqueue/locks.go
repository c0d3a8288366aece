package taskqueue

import (
	"hash/fnv"
	"sync"
)

// stripedLocks serialises work on one run inside this process, so a run's
// transition and the event announcing it are published in the same order as
// its revisions. Across processes the compare-and-set keeps records correct
// and each event's sequence extension keeps them orderable.
type stripedLocks [256]sync.Mutex

func (l *stripedLocks) lock(key string) func() {
	m := &l[stripeOf(key)]
	m.Lock()
	return m.Unlock
}

// stripeOf is the stripe whose lock serialises key.
func stripeOf(key string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return h.Sum32() % uint32(len(stripedLocks{}))
}
