package mesh

// Status is the state of a task run.
type Status string

// Task-run states. The names follow seed 001; input-required is the multi-turn
// state of the A2A standard.
const (
	StatusPending       Status = "pending"
	StatusRunning       Status = "running"
	StatusInputRequired Status = "input-required"
	StatusCompleted     Status = "completed"
	StatusFailed        Status = "failed"
	StatusCanceled      Status = "canceled"
	// StatusApprovalRequired: the run's host asked permission for a step
	// (a tool call) that the agent's approval policy leaves to a person;
	// the host waits, and the run goes back to running once it is decided
	// (docs/approvals.md).
	StatusApprovalRequired Status = "approval-required"
)

// transitions is the one place the task-run state machine is written down.
var transitions = map[Status][]Status{
	// A pending run may be claimed, canceled, or failed by the platform
	// (deadline passed, no attempts left).
	StatusPending: {StatusRunning, StatusCanceled, StatusFailed},
	// A running run ends, asks for input, or goes back to pending when its lease
	// expires and its retry policy allows another attempt.
	StatusRunning: {StatusCompleted, StatusFailed, StatusCanceled, StatusInputRequired, StatusPending, StatusApprovalRequired},
	// A run waiting for input continues (back to the queue) or ends.
	StatusInputRequired: {StatusPending, StatusCanceled, StatusFailed},
	// A run waiting for a person's approval goes back to running once the
	// step is decided (allowed, denied, or denied at the time limit), or
	// ends, or goes back to pending when its runtime's lease expires and
	// its retry policy allows another attempt.
	StatusApprovalRequired: {StatusRunning, StatusCanceled, StatusFailed, StatusPending},
}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusRunning, StatusInputRequired, StatusCompleted, StatusFailed, StatusCanceled, StatusApprovalRequired:
		return true
	}
	return false
}

// Terminal reports whether no transition leaves s.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCanceled
}

// Settled reports whether a caller waiting for a run stops waiting: the run
// ended, or asks for input.
func (s Status) Settled() bool { return s.Terminal() || s == StatusInputRequired }

// CanTransition reports whether the state machine allows from -> to.
func CanTransition(from, to Status) bool {
	for _, next := range transitions[from] {
		if next == to {
			return true
		}
	}
	return false
}

// AllStatuses lists every status, in lifecycle order.
func AllStatuses() []Status {
	return []Status{StatusPending, StatusRunning, StatusInputRequired, StatusCompleted, StatusFailed, StatusCanceled, StatusApprovalRequired}
}
