package provider

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/a2amesh/a2amesh/mesh"
)

// Errors callers branch on.
var (
	// ErrNoCommand is returned by NewCommand without a command to run.
	ErrNoCommand = errors.New("no command given")
	// ErrArtifactTooLarge is returned by CollectArtifacts for a file over
	// the size cap.
	ErrArtifactTooLarge = errors.New("too large")
	// ErrHostNotFound is returned by a host provider's constructor when the
	// host's executable is not installed, so the adapter refuses to start
	// rather than fail every task.
	ErrHostNotFound = errors.New("agent host not found")
	// ErrMissingCredential is returned by a host provider's constructor when
	// a credential the host cannot work without is not set. Its message names
	// the environment variable, never a value.
	ErrMissingCredential = errors.New("missing credential")
	// ErrPromptTooLong fails a task whose prompt must travel on a host's
	// command line and does not fit there.
	ErrPromptTooLong = errors.New("prompt too long for the command line")
)

// BudgetError is a host that stopped itself at the run's budget (Claude
// Code's --max-budget-usd): the adapter fails the task with the code
// mesh.ReasonBudgetExceeded and what the host reported spending, which
// the platform counts against the agent's budgets.
type BudgetError struct {
	Err   error
	Usage *mesh.Usage
}

func (e *BudgetError) Error() string { return e.Err.Error() }

func (e *BudgetError) Unwrap() error { return e.Err }

// ExitError reports a host process that exited unsuccessfully on its own.
type ExitError struct {
	// Code is the exit status, or -1 when a signal ended the process.
	Code int
	// Signal is the signal that ended the process, when one did.
	Signal syscall.Signal
	// StderrTail is the end of the process's stderr, trimmed.
	StderrTail string
}

// Error gives the exit status or signal and quotes the end of stderr.
func (e *ExitError) Error() string {
	msg := fmt.Sprintf("exited with status %d", e.Code)
	if e.Code < 0 && e.Signal != 0 {
		msg = "killed by signal " + e.Signal.String()
	}
	if e.StderrTail != "" {
		msg += ": " + e.StderrTail
	}
	return msg
}
