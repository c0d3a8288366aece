package ledger

import (
	"crypto/rand"
	"fmt"
	"os"
)

// NewReportID returns a random report id for the outbox.
func NewReportID() string {
	return "rep_" + rand.Text()
}

// AppendPending queues a report that could not be delivered (seed 001 §4.6:
// after one retry) and syncs it to disk before returning, so it survives a
// crash. A second report for the same task run attempt, or a reused report
// id, is refused with ErrAlreadyReported: one attempt has one result.
//
// A completion that stores artifacts first gives their content too:
// contents[i] is that of r.Artifacts[i], nil for one already stored (its
// Ref set). It is kept in files beside the ledger (as private as the
// ledger), not in its line; a content holding a registered secret is
// refused with ErrSecret, as a line is.
func (l *Ledger) AppendPending(r Report, contents ...[]byte) error {
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
	if len(contents) != len(r.Artifacts) {
		return errorf("report %s has %d artifacts and %d contents", r.ID, len(r.Artifacts), len(contents))
	}
	line, err := l.encode(nil, Entry{Event: EventReportPending, TaskRunID: r.TaskRunID, Attempt: r.Attempt, Status: string(r.Kind), Report: &r})
	if err != nil {
		return err
	}
	if len(r.Artifacts) > 0 {
		if err := l.keep(r, contents); err != nil {
			return err
		}
	}
	if err := l.writeLine(true, line); err != nil {
		_ = os.RemoveAll(l.keptDir(r.ID))
		return err
	}
	return nil
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
	r, err := l.pendingReport(id)
	if err != nil {
		return fmt.Errorf("mark report %s %s: %w", id, event, err)
	}
	// The closing line names the report but does not repeat its body.
	r.Body, r.Artifacts = nil, nil
	err = l.write(true, Entry{
		Event:     event,
		TaskRunID: r.TaskRunID,
		Attempt:   r.Attempt,
		Status:    string(r.Kind),
		Message:   reason,
		Report:    &r,
	})
	if err != nil {
		return err
	}
	if err := os.RemoveAll(l.keptDir(id)); err != nil {
		return fmt.Errorf("remove kept artifacts of report %s: %w", id, err)
	}
	return nil
}

// pendingReport is the pending report id (ErrNotPending when there is
// none). l.mu must be held.
func (l *Ledger) pendingReport(id string) (Report, error) {
	pending, err := l.Pending()
	if err != nil {
		return Report{}, err
	}
	for _, r := range pending {
		if r.ID == id {
			return r, nil
		}
	}
	return Report{}, ErrNotPending
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
		case EventReportArtifactWritten:
			i, ok := byID[e.Report.ID]
			if !ok || !slots[i].open {
				continue
			}
			kept := slots[i].report.Artifacts
			for _, a := range e.Report.Artifacts {
				if a.Index >= 0 && a.Index < len(kept) {
					kept[a.Index].Ref = a.Ref
				}
			}
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
