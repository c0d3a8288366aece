package cliusage

import "errors"

// Exit codes every program shares. A program adds its own from 3 up for
// outcomes a script branches on (a refused credential, a failed run).
const (
	// ExitError: the command could not do its work (the platform did not
	// answer, a file could not be written, ...).
	ExitError = 1
	// ExitUsage: the command line is wrong: an unknown command or flag, a
	// value a flag cannot take, the wrong number of arguments. Nothing was
	// done.
	ExitUsage = 2
)

// UsageError is a command line the program refuses before doing anything.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usage marks err as a wrong command line, so the program exits with
// ExitUsage.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return &UsageError{Err: err}
}

// Coded is an error that chooses the program's exit code itself.
type Coded interface {
	error
	ExitCode() int
}

// ExitCode is the code a program exits with for err: the code of a Coded
// error in its chain, ExitUsage for a UsageError, ExitError otherwise.
func ExitCode(err error) int {
	var coded Coded
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	var usage *UsageError
	if errors.As(err, &usage) {
		return ExitUsage
	}
	return ExitError
}
