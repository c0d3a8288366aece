package taskqueue

import (
	"sort"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// summary is what the index keeps of a run: enough to filter, page, and find
// expired leases and deadlines without reading records.
type summary struct {
	id             string
	agentID        string
	conversationID string
	runtimeID      string
	status         mesh.Status
	attempt        int
	maxAttempts    int
	lease          time.Time
	deadline       time.Time
	updatedAt      time.Time
	rev            uint64
}

func summarize(r *mesh.TaskRun, rev uint64) *summary {
	s := &summary{
		id: r.ID, agentID: r.TargetAgentID, conversationID: r.ConversationID, runtimeID: r.RuntimeID, status: r.Status,
		attempt: r.Attempt, maxAttempts: r.MaxAttempts, updatedAt: r.UpdatedAt, rev: rev,
	}
	if r.LeaseExpiresAt != nil {
		s.lease = *r.LeaseExpiresAt
	}
	if r.Deadline != nil {
		s.deadline = *r.Deadline
	}
	return s
}

// index is the task queue's read model of every run, built from the runs
// bucket: ids in creation order for newest-first paging, and the set of runs
// that have not ended for the reaper.
type index struct {
	mu     sync.RWMutex
	byID   map[string]*summary
	order  []*summary // ascending id, which is ascending creation time
	active map[string]*summary
	// byStatus counts runs per status, for metrics.
	byStatus map[mesh.Status]int
}

func newIndex() *index {
	return &index{byID: map[string]*summary{}, active: map[string]*summary{}, byStatus: map[mesh.Status]int{}}
}

// countByStatus copies the number of runs in each status.
func (ix *index) countByStatus() map[mesh.Status]int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make(map[mesh.Status]int, len(ix.byStatus))
	for st, n := range ix.byStatus {
		out[st] = n
	}
	return out
}

// onChange applies a change from the runs bucket (or this process's own write).
func (ix *index) onChange(id string, p **summary) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	old, had := ix.byID[id]
	if p == nil {
		if had {
			ix.byStatus[old.status]--
			delete(ix.byID, id)
			delete(ix.active, id)
			ix.removeOrdered(id)
		}
		return
	}
	s := *p
	if had && old.rev >= s.rev {
		return
	}
	ix.byID[id] = s
	if had {
		ix.byStatus[old.status]--
	}
	ix.byStatus[s.status]++
	if had {
		ix.order[ix.position(id)] = s
	} else {
		ix.insertOrdered(s)
	}
	if s.status.Terminal() {
		delete(ix.active, id)
	} else {
		ix.active[id] = s
	}
}

func (ix *index) position(id string) int {
	return sort.Search(len(ix.order), func(i int) bool { return ix.order[i].id >= id })
}

func (ix *index) insertOrdered(s *summary) {
	n := len(ix.order)
	if n == 0 || ix.order[n-1].id < s.id {
		ix.order = append(ix.order, s)
		return
	}
	i := ix.position(s.id)
	ix.order = append(ix.order, nil)
	copy(ix.order[i+1:], ix.order[i:])
	ix.order[i] = s
}

func (ix *index) removeOrdered(id string) {
	i := ix.position(id)
	if i < len(ix.order) && ix.order[i].id == id {
		ix.order = append(ix.order[:i], ix.order[i+1:]...)
	}
}

// filter selects runs for a page.
type filter struct {
	agentID        string
	conversationID string
	status         mesh.Status
}

func (f filter) match(s *summary) bool {
	return (f.agentID == "" || s.agentID == f.agentID) && (f.status == "" || s.status == f.status) &&
		(f.conversationID == "" || s.conversationID == f.conversationID)
}

// page returns up to limit ids matching f, newest first, strictly older than
// cursor (when set) after skipping offset matches. more is true when at least
// one further match exists. total counts every match when asked.
func (ix *index) page(f filter, cursor string, offset, limit int, withTotal bool) (ids []string, more bool, total int) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	start := len(ix.order) - 1
	if cursor != "" {
		start = ix.position(cursor) - 1
	}
	skipped := 0
	for i := start; i >= 0; i-- {
		s := ix.order[i]
		if !f.match(s) {
			continue
		}
		switch {
		case skipped < offset:
			skipped++
		case len(ids) < limit:
			ids = append(ids, s.id)
		default:
			more = true
		}
		if more {
			break
		}
	}
	if withTotal {
		for _, s := range ix.order {
			if f.match(s) {
				total++
			}
		}
	}
	return ids, more, total
}

// activeRuns copies the runs that have not ended.
func (ix *index) activeRuns() []summary {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]summary, 0, len(ix.active))
	for _, s := range ix.active {
		out = append(out, *s)
	}
	return out
}

// runningBy lists the runs a runtime holds.
func (ix *index) runningBy(runtimeID string) []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var ids []string
	for _, s := range ix.active {
		if s.status == mesh.StatusRunning && s.runtimeID == runtimeID {
			ids = append(ids, s.id)
		}
	}
	return ids
}
