package taskqueue

import (
	"slices"
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
	// delegated runs wait for the delegation service, not a runtime.
	delegated   bool
	status      mesh.Status
	attempt     int
	maxAttempts int
	lease       time.Time
	deadline    time.Time
	updatedAt   time.Time
	rev         uint64
	// usage is what the run's own host reported; day is the UTC day it
	// counts in (mesh.UsageDay).
	usage *mesh.Usage
	day   string
}

// runHead is the part of a run record the index reads. The watch of the
// runs bucket decodes every record written, by any copy of the service,
// into it: its fields are what a summary needs, and the input, output and
// metadata it leaves out are skipped by the decoder, not copied.
type runHead struct {
	ID             string      `json:"task_run_id"`
	ConversationID string      `json:"conversation_id"`
	TargetAgentID  string      `json:"target_agent_id"`
	Status         mesh.Status `json:"status"`
	RuntimeID      string      `json:"runtime_id,omitempty"`
	Attempt        int         `json:"attempt"`
	MaxAttempts    int         `json:"max_attempts"`
	Deadline       *time.Time  `json:"deadline,omitempty"`
	LeaseExpiresAt *time.Time  `json:"lease_expires_at,omitempty"`
	UpdatedAt      time.Time   `json:"updated_at"`
	CreatedAt      time.Time   `json:"created_at"`
	Usage          *mesh.Usage `json:"usage,omitempty"`
	// DelegatedTo is only tested for presence.
	DelegatedTo *struct{} `json:"delegated_to,omitempty"`
}

// headOf is the head of a run this process just wrote.
func headOf(r *mesh.TaskRun) *runHead {
	h := &runHead{
		ID: r.ID, ConversationID: r.ConversationID, TargetAgentID: r.TargetAgentID,
		Status: r.Status, RuntimeID: r.RuntimeID, Attempt: r.Attempt, MaxAttempts: r.MaxAttempts,
		Deadline: r.Deadline, LeaseExpiresAt: r.LeaseExpiresAt, UpdatedAt: r.UpdatedAt,
		CreatedAt: r.CreatedAt, Usage: r.Usage,
	}
	if r.Delegated() {
		h.DelegatedTo = &struct{}{}
	}
	return h
}

func summarize(r *runHead, rev uint64) *summary {
	s := &summary{
		id: r.ID, agentID: r.TargetAgentID, conversationID: r.ConversationID, runtimeID: r.RuntimeID,
		delegated: r.DelegatedTo != nil, status: r.Status,
		attempt: r.Attempt, maxAttempts: r.MaxAttempts, updatedAt: r.UpdatedAt, rev: rev,
		usage: r.Usage, day: mesh.UsageDay(r.CreatedAt),
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
// bucket: ids in creation order for newest-first paging, the set of runs
// that have not ended for the reaper, and the pending runs of each queue
// (queueOf), which is what runtimes are offered.
type index struct {
	mu     sync.RWMutex
	byID   map[string]*summary
	order  []*summary // ascending id, which is ascending creation time
	active map[string]*summary
	// byStatus counts runs per status, for metrics.
	byStatus map[mesh.Status]int
	// pending holds each queue's pending runs in ascending id (oldest
	// first); woken holds, per queue, a channel closed when a run becomes
	// pending there (wake).
	pending map[string][]*summary
	woken   map[string]chan struct{}
	// running holds, per runtime, the runs it holds.
	running map[string]map[string]*summary
	// cancelWatches holds, per runtime, the requests waiting to hear that
	// a run it holds was canceled.
	cancelWatches map[string][]*cancelWatch
	// spent holds, per agent and UTC day, what its runs' hosts reported
	// (usage.go).
	spent map[usageKey]*dayUsage
	// runWatches holds, per run, channels closed at the run's next change
	// (approval.go waits on them).
	runWatches map[string][]chan struct{}
	// seenAt holds, per run that has not ended, when this index first held
	// it: the run was created before then (agentOfRuns).
	seenAt map[string]time.Time
}

// cancelWatch is one runtime's request waiting for cancels of its runs.
type cancelWatch struct {
	// woken is closed once canceled names a run.
	woken    chan struct{}
	canceled []string
}

func newIndex() *index {
	return &index{
		byID: map[string]*summary{}, active: map[string]*summary{}, byStatus: map[mesh.Status]int{},
		pending: map[string][]*summary{}, woken: map[string]chan struct{}{}, running: map[string]map[string]*summary{},
		cancelWatches: map[string][]*cancelWatch{},
		spent:         map[usageKey]*dayUsage{},
		runWatches:    map[string][]chan struct{}{},
		seenAt:        map[string]time.Time{},
	}
}

// delegationQueue is the queue of delegated runs; agent ids are UUIDs, so
// no agent's queue has its name.
const delegationQueue = "_delegation"

// queueOf is the queue a pending run waits in: its agent's, or the
// delegation service's.
func queueOf(s *summary) string {
	if s.delegated {
		return delegationQueue
	}
	return s.agentID
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
			if old.status == mesh.StatusPending {
				ix.removePending(old)
			}
			ix.unhold(old)
			ix.byStatus[old.status]--
			ix.count(old, -1)
			delete(ix.byID, id)
			delete(ix.active, id)
			delete(ix.seenAt, id)
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
		ix.count(old, -1)
	}
	ix.count(s, 1)
	if had {
		ix.byStatus[old.status]--
		if old.status == mesh.StatusPending {
			ix.removePending(old)
		}
		ix.unhold(old)
	}
	if s.status == mesh.StatusPending {
		ix.addPending(s)
	}
	ix.tellChanged(id)
	if (s.status == mesh.StatusRunning || s.status == mesh.StatusApprovalRequired) && s.runtimeID != "" {
		if ix.running[s.runtimeID] == nil {
			ix.running[s.runtimeID] = map[string]*summary{}
		}
		ix.running[s.runtimeID][id] = s
	}
	ix.byStatus[s.status]++
	if had {
		ix.order[ix.position(id)] = s
	} else {
		ix.insertOrdered(s)
	}
	if s.status.Terminal() {
		delete(ix.active, id)
		delete(ix.seenAt, id)
	} else {
		ix.active[id] = s
		if !had {
			ix.seenAt[id] = time.Now()
		}
	}
	if s.status == mesh.StatusCanceled && s.runtimeID != "" && (!had || old.status != mesh.StatusCanceled) {
		ix.tellCanceled(s.runtimeID, id)
	}
}

// tellCanceled wakes the requests of runtimeID waiting for cancels. Call
// with ix.mu held.
func (ix *index) tellCanceled(runtimeID, id string) {
	for _, w := range ix.cancelWatches[runtimeID] {
		if len(w.canceled) == 0 {
			close(w.woken)
		}
		w.canceled = append(w.canceled, id)
	}
}

// watchCancels registers a request of runtimeID waiting for cancels, and
// returns those of ids that the index knows were canceled while the
// runtime held them.
func (ix *index) watchCancels(runtimeID string, ids []string) (*cancelWatch, []string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	var already []string
	for _, id := range ids {
		if s, ok := ix.byID[id]; ok && s.status == mesh.StatusCanceled && s.runtimeID == runtimeID {
			already = append(already, id)
		}
	}
	w := &cancelWatch{woken: make(chan struct{})}
	ix.cancelWatches[runtimeID] = append(ix.cancelWatches[runtimeID], w)
	return w, already
}

// unwatchCancels forgets w and returns the runs it was told of.
func (ix *index) unwatchCancels(runtimeID string, w *cancelWatch) []string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	forget(ix.cancelWatches, runtimeID, w)
	return w.canceled
}

// unhold forgets s among the runs its runtime holds. Call with ix.mu held.
func (ix *index) unhold(s *summary) {
	held := ix.running[s.runtimeID]
	if held[s.id] != s {
		return
	}
	delete(held, s.id)
	if len(held) == 0 {
		delete(ix.running, s.runtimeID)
	}
}

// addPending puts s in its queue, in id order, and wakes the queue's
// waiters. Call with ix.mu held.
func (ix *index) addPending(s *summary) {
	q := queueOf(s)
	list := ix.pending[q]
	i := sort.Search(len(list), func(i int) bool { return list[i].id >= s.id })
	if i < len(list) && list[i].id == s.id {
		list[i] = s
	} else {
		list = append(list, nil)
		copy(list[i+1:], list[i:])
		list[i] = s
	}
	ix.pending[q] = list
	ix.wakeLocked(q)
}

// removePending takes s's run out of its queue. Call with ix.mu held.
func (ix *index) removePending(s *summary) {
	q := queueOf(s)
	list := ix.pending[q]
	i := sort.Search(len(list), func(i int) bool { return list[i].id >= s.id })
	if i < len(list) && list[i].id == s.id {
		list = append(list[:i], list[i+1:]...)
	}
	if len(list) == 0 {
		delete(ix.pending, q)
	} else {
		ix.pending[q] = list
	}
}

// pendingIn copies up to n pending runs of queue q, oldest first, leaving
// out those skip names, and returns the channel that is closed when
// another run becomes pending there: read together, so no run is missed
// between a look and a wait. skip must not use the index.
func (ix *index) pendingIn(q string, n int, skip func(id string) bool) ([]summary, <-chan struct{}) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ch, ok := ix.woken[q]
	if !ok {
		ch = make(chan struct{})
		ix.woken[q] = ch
	}
	var out []summary
	for _, s := range ix.pending[q] {
		if len(out) == n {
			break
		}
		if !skip(s.id) {
			out = append(out, *s)
		}
	}
	return out, ch
}

// wake tells queue q's waiters to look again.
func (ix *index) wake(q string) {
	ix.mu.Lock()
	ix.wakeLocked(q)
	ix.mu.Unlock()
}

func (ix *index) wakeLocked(q string) {
	if ch, ok := ix.woken[q]; ok {
		close(ch)
		delete(ix.woken, q)
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
	for id := range ix.running[runtimeID] {
		ids = append(ids, id)
	}
	return ids
}

// queueOfRun is the queue run id waits in, if it is pending.
func (ix *index) queueOfRun(id string) (string, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	s, ok := ix.byID[id]
	if !ok || s.status != mesh.StatusPending {
		return "", false
	}
	return queueOf(s), true
}

// watchRun returns a channel closed at the run's next change; stop
// forgets it.
func (ix *index) watchRun(id string) (changed <-chan struct{}, stop func()) {
	ch := make(chan struct{})
	ix.mu.Lock()
	ix.runWatches[id] = append(ix.runWatches[id], ch)
	ix.mu.Unlock()
	return ch, func() {
		ix.mu.Lock()
		defer ix.mu.Unlock()
		forget(ix.runWatches, id, ch)
	}
}

// tellChanged wakes the watches of a run and forgets them. Call with
// ix.mu held.
func (ix *index) tellChanged(id string) {
	for _, ch := range ix.runWatches[id] {
		close(ch)
	}
	delete(ix.runWatches, id)
}

// forget removes w from the watchers of key, and key once none is left.
func forget[W comparable](watches map[string][]W, key string, w W) {
	ws := slices.DeleteFunc(watches[key], func(x W) bool { return x == w })
	if len(ws) == 0 {
		delete(watches, key)
		return
	}
	watches[key] = ws
}

// firstSeen is the latest of the instants this index first held each run
// ids names, or false when it does not hold one of them (any more).
func (ix *index) firstSeen(ids []string) (time.Time, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var latest time.Time
	for _, id := range ids {
		t, ok := ix.seenAt[id]
		if !ok {
			return time.Time{}, false
		}
		if t.After(latest) {
			latest = t
		}
	}
	return latest, true
}
