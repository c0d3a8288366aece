package ledger

import (
	"errors"
	"fmt"
)

// Errors callers branch on with errors.Is.
var (
	// ErrSecret means an entry contained a string registered with
	// WithSecrets; nothing was written.
	ErrSecret = errors.New("ledger entry contains a registered secret")
	// ErrAlreadyReported means the task run attempt already has a report in
	// the outbox; a second, possibly different, result is never queued.
	ErrAlreadyReported = errors.New("task run attempt already has a report")
	// ErrNotPending means the report is not open in the outbox: unknown,
	// already delivered, or already abandoned.
	ErrNotPending = errors.New("report is not pending")
	// ErrInvalidEntry means an entry or report lacks what it needs to be
	// written.
	ErrInvalidEntry = errors.New("invalid ledger entry")
	// ErrInvalidAgentID means the agent id is not usable as a single
	// directory name.
	ErrInvalidAgentID = errors.New("invalid agent id")
	// ErrClosed means the ledger was closed.
	ErrClosed = errors.New("ledger is closed")
)

func errorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidEntry}, args...)...)
}
