package taskqueue

import (
	"slices"
	"sync"

	"github.com/a2amesh/a2amesh/mesh"
)

// maxRecent bounds the cache; past it, runs are simply read from the bucket.
const maxRecent = 10000

// maxRecentContent is the largest input and output a cached run may carry
// together. A run with more is read from the bucket at its next transition:
// the read costs little beside the record's size, while keeping it would
// hold a copy of every large pending input in memory, up to maxRecent of
// them (the bucket keeps them already).
const maxRecentContent = mesh.LargeBodyBytes

// recentRuns keeps the last stored version of runs this process wrote that
// have not ended. A run's transitions mostly follow each other in the same
// process (claim, progress, complete), so the next compare-and-set can usually
// start from here instead of a read; a stale entry only costs a failed
// compare-and-set and a fresh read.
type recentRuns struct {
	mu sync.Mutex
	m  map[string]cachedRun
}

type cachedRun struct {
	run mesh.TaskRun
	rev uint64
}

func newRecentRuns() *recentRuns { return &recentRuns{m: map[string]cachedRun{}} }

// get returns a copy the caller may change.
func (c *recentRuns) get(id string) (*mesh.TaskRun, uint64, bool) {
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if !ok {
		return nil, 0, false
	}
	run := e.run
	run.Artifacts = slices.Clone(run.Artifacts)
	return &run, e.rev, true
}

func (c *recentRuns) put(run *mesh.TaskRun, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if run.Status.Terminal() || len(run.Input)+len(run.Output) > maxRecentContent {
		delete(c.m, run.ID)
		return
	}
	if _, ok := c.m[run.ID]; !ok && len(c.m) >= maxRecent {
		return
	}
	cp := *run
	cp.Artifacts = slices.Clone(run.Artifacts)
	c.m[run.ID] = cachedRun{run: cp, rev: rev}
}

func (c *recentRuns) drop(id string) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}
