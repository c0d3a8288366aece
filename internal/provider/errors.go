package provider

import (
	"errors"
	"fmt"
	"syscall"
)

// Errors callers branch on.
var (
	// ErrNoCommand is returned by NewCommand without a command to run.
	ErrNoCommand = errors.New("no command given")
	// ErrArtifactTooLarge is returned by CollectArtifacts for a file over
	// the size cap.
	ErrArtifactTooLarge = errors.New("too large")
)

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
