package main

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/internal/restclient"
)

// Exit codes of a2a-platform, beyond cliusage's 0 (done), 1 (could not do
// its work) and 2 (wrong command line). docs/cli.md tables them with the
// other programs'.
const (
	// With --wait (tasks create, tasks reply), after the run is printed.
	exitRunFailed        = 3 // the run ended failed (its error says why)
	exitRunCanceled      = 4 // the run was canceled
	exitRunInputRequired = 5 // the run waits for an answer: tasks reply
	// exitAuth: there is no owner credential, or the platform refused it
	// (HTTP 401 or 403). Not 4 as in gh: 4 and 5 were --wait's already,
	// and scripts branch on them.
	exitAuth = 6
	// exitNotFound: what the command names does not exist (HTTP 404, an
	// unknown context).
	exitNotFound = 7
)

// waitUsage is the help of --wait, naming its exit codes.
var waitUsage = fmt.Sprintf("wait until the run ends, or asks for input, and print it then; exit 0 when it completed, %d failed, %d canceled, %d waits for input",
	exitRunFailed, exitRunCanceled, exitRunInputRequired)

// exitCode is the code a2a-platform exits with for err.
func exitCode(err error) int {
	var coded cliusage.Coded
	var usage *cliusage.UsageError
	var noCredential *noCredentialError
	var notFound *notFoundError
	switch {
	case errors.As(err, &coded), errors.As(err, &usage):
		return cliusage.ExitCode(err)
	case errors.As(err, &noCredential):
		return exitAuth
	case errors.As(err, &notFound):
		return exitNotFound
	}
	switch restclient.StatusOf(err) {
	case http.StatusUnauthorized, http.StatusForbidden:
		return exitAuth
	case http.StatusNotFound:
		return exitNotFound
	}
	return cliusage.ExitError
}

// noCredentialError: no owner credential could be read.
type noCredentialError struct{ err error }

func (e *noCredentialError) Error() string { return e.err.Error() }
func (e *noCredentialError) Unwrap() error { return e.err }

// notFoundError: something named on the command line that is kept
// locally (a context) does not exist.
type notFoundError struct{ err error }

func (e *notFoundError) Error() string { return e.err.Error() }
func (e *notFoundError) Unwrap() error { return e.err }
