package ledger

import (
	"encoding/json"
	"time"
)

// Event names what a ledger line records.
type Event string

// Ledger events. The chain runtime_started → task_pulled → task_started →
// task_completed/task_failed is the acceptance trail of seed 001 §9.
const (
	EventRuntimeStarted  Event = "runtime_started"
	EventRuntimeStopped  Event = "runtime_stopped"
	EventTaskPulled      Event = "task_pulled"
	EventTaskStarted     Event = "task_started"
	EventTaskCompleted   Event = "task_completed"
	EventTaskFailed      Event = "task_failed"
	EventTaskCanceled    Event = "task_canceled"
	EventArtifactWritten Event = "artifact_written"
	// EventReportFailed records one failed attempt to deliver a report.
	EventReportFailed Event = "report_failed"
	// EventReportPending, EventReportDelivered and EventReportAbandoned are
	// the outbox; only AppendPending, MarkDelivered and MarkAbandoned write
	// them, so the outbox stays consistent.
	EventReportPending   Event = "report_pending"
	EventReportDelivered Event = "report_delivered"
	EventReportAbandoned Event = "report_abandoned"
	// EventReportArtifactWritten notes that the platform stored one
	// artifact of a pending report (its ref), so that a retry skips it.
	EventReportArtifactWritten Event = "report_artifact_written"
	EventHeartbeatFailed       Event = "heartbeat_failed"
	// EventAuthRejected records a 401/403: the runtime must be paired again
	// (seed 001 §4.7).
	EventAuthRejected Event = "auth_rejected"
)

// outboxEvent reports whether e belongs to the outbox bookkeeping.
func (e Event) outboxEvent() bool {
	return e == EventReportPending || e == EventReportDelivered || e == EventReportAbandoned || e == EventReportArtifactWritten
}

// Entry is one ledger line. It deliberately has no field for a token or any
// other credential (seed 001 §5.2).
type Entry struct {
	// TS is when the entry was written, UTC; filled in when zero.
	TS    time.Time `json:"ts"`
	Event Event     `json:"event"`
	// AgentID and RuntimeID are filled in from the ledger when empty.
	AgentID   string `json:"agent_id"`
	RuntimeID string `json:"runtime_id"`
	TaskRunID string `json:"task_run_id,omitempty"`
	Attempt   int    `json:"attempt,omitempty"`
	Status    string `json:"status,omitempty"`
	ErrorCode string `json:"error_code,omitempty"`
	Message   string `json:"message,omitempty"`
	// Report is set on outbox entries.
	Report *Report `json:"report,omitempty"`
}

// ReportKind says which platform call a report is for.
type ReportKind string

// Report kinds: POST /task-runs/{id}/complete and /fail.
const (
	ReportComplete ReportKind = "complete"
	ReportFail     ReportKind = "fail"
)

// Report is a complete or fail call the runtime owes the platform.
type Report struct {
	// ID identifies the report in the outbox; see NewReportID.
	ID        string     `json:"report_id"`
	Kind      ReportKind `json:"kind,omitempty"`
	TaskRunID string     `json:"task_run_id,omitempty"`
	Attempt   int        `json:"attempt,omitempty"`
	// Body is the exact request body to re-send, so a retry can never send a
	// different result than the first try.
	Body json.RawMessage `json:"body,omitempty"`
	// Artifacts are the artifacts a completion stores before it is sent,
	// in order: their descriptions here, the content of those not yet
	// stored in files beside the ledger (see KeptContent), which the
	// report's close removes.
	Artifacts []KeptArtifact `json:"artifacts,omitempty"`
}

// KeptArtifact is one artifact of a pending report.
type KeptArtifact struct {
	// Index is the artifact's place in the report's Artifacts.
	Index int `json:"index"`
	// Write describes the artifact without its content, in the shape the
	// runtime gives it.
	Write json.RawMessage `json:"write,omitempty"`
	// Ref is the platform's reference to the stored artifact, once it is
	// stored; nil until then.
	Ref json.RawMessage `json:"ref,omitempty"`
}

func (r Report) validate() error {
	switch {
	case r.ID == "":
		return errorf("report has no report_id")
	case r.Kind != ReportComplete && r.Kind != ReportFail:
		return errorf("report kind %q is neither complete nor fail", r.Kind)
	case r.TaskRunID == "":
		return errorf("report has no task_run_id")
	case len(r.Body) == 0 || !json.Valid(r.Body):
		return errorf("report %s body is not valid JSON", r.ID)
	case validateElement(r.ID) != nil:
		return errorf("report id %q is not a single path element", r.ID)
	case len(r.Artifacts) > 0 && r.Kind != ReportComplete:
		return errorf("report %s: only a completion stores artifacts", r.ID)
	}
	for i, a := range r.Artifacts {
		switch {
		case a.Index != i:
			return errorf("report %s: artifact %d has index %d", r.ID, i, a.Index)
		case len(a.Write) == 0 || !json.Valid(a.Write):
			return errorf("report %s: artifact %d has no valid description", r.ID, i)
		case a.Ref != nil && !json.Valid(a.Ref):
			return errorf("report %s: artifact %d has a ref that is not valid JSON", r.ID, i)
		}
	}
	return nil
}

// attemptKey identifies one attempt of one task run.
type attemptKey struct {
	taskRunID string
	attempt   int
}

func (r Report) attempt() attemptKey {
	return attemptKey{r.TaskRunID, r.Attempt}
}
