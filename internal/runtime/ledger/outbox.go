package ledger

import (
	"crypto/rand"
	"fmt"
)

// NewReportID returns a random report id for the outbox.
func NewReportID() string {
	return "rep_" + rand.Text()
}

// AppendPending queues a report that could not be delivered (seed 001 §4.6:
// after one retry) and syncs it to disk before returning, so it survives a
// crash. A second report for the same task run attempt, or a reused report
// id, is refused with ErrAlreadyReported: one attempt has one result.
func (l *Ledger) AppendPending(r Report) error {
	if err := r.validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	entries, err := l.Entries()
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Event != EventReportPending || e.Report == nil {
			continue
		}
		if e.Report.ID == r.ID || e.Report.attempt() == r.attempt() {
			return fmt.Errorf("queue report %s for task run %s attempt %d: %w (report %s)",
				r.ID, r.TaskRunID, r.Attempt, ErrAlreadyReported, e.Report.ID)
		}
	}
	return l.write(true, Entry{
		Event:     EventReportPending,
		TaskRunID: r.TaskRunID,
		Attempt:   r.Attempt,
		Status:    string(r.Kind),
		Report:    &r,
	})
}

// Pending returns the open reports in the order they were queued: those with
// a report_pending entry and no later report_delivered or report_abandoned.
// When one task run attempt has several pending entries, only the first
// counts, so the runtime never sends two different results for one attempt.
func (l *Ledger) Pending() ([]Report, error) {
	entries, err := l.Entries()
	if err != nil {
		return nil, err
	}
	return pendingReports(entries), nil
}

// Backlog is the number of pending reports, for a2a-runtime status.
func (l *Ledger) Backlog() (int, error) {
	pending, err := l.Pending()
	return len(pending), err
}

// MarkDelivered closes a pending report the platform accepted.
func (l *Ledger) MarkDelivered(id string) error {
	return l.settle(id, EventReportDelivered, "")
}

// MarkAbandoned closes a pending report that will never be delivered, for
// example because the platform answered 409: the run already ended.
func (l *Ledger) MarkAbandoned(id, reason string) error {
	return l.settle(id, EventReportAbandoned, reason)
}

func (l *Ledger) settle(id string, event Event, reason string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	pending, err := l.Pending()
	if err != nil {
		return err
	}
	for _, r := range pending {
		if r.ID != id {
			continue
		}
		// The closing line names the report but does not repeat its body.
		r.Body = nil
		return l.write(true, Entry{
			Event:     event,
			TaskRunID: r.TaskRunID,
			Attempt:   r.Attempt,
			Status:    string(r.Kind),
			Message:   reason,
			Report:    &r,
		})
	}
	return fmt.Errorf("mark report %s %s: %w", id, event, ErrNotPending)
}

// pendingReports replays the outbox entries.
func pendingReports(entries []Entry) []Report {
	type slot struct {
		report Report
		open   bool
	}
	var slots []slot
	byID := map[string]int{}
	attempts := map[attemptKey]bool{}
	for _, e := range entries {
		if e.Report == nil || e.Report.ID == "" {
			continue
		}
		switch e.Event {
		case EventReportPending:
			r := *e.Report
			if _, dup := byID[r.ID]; dup || attempts[r.attempt()] {
				continue
			}
			byID[r.ID] = len(slots)
			attempts[r.attempt()] = true
			slots = append(slots, slot{report: r, open: true})
		case EventReportDelivered, EventReportAbandoned:
			// A close before its pending entry closes nothing.
			if i, ok := byID[e.Report.ID]; ok {
				slots[i].open = false
			}
		}
	}
	var open []Report
	for _, s := range slots {
		if s.open {
			open = append(open, s.report)
		}
	}
	return open
}
