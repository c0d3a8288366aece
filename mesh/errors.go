package mesh

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code. Front endpoints map each code to
// their own shape (HTTP status, JSON-RPC code) in exactly one place.
type Code string

// Error codes shared by every service.
const (
	CodeInvalidRequest    Code = "INVALID_REQUEST"
	CodeUnauthorized      Code = "UNAUTHORIZED"
	CodeForbidden         Code = "FORBIDDEN"
	CodeNotFound          Code = "NOT_FOUND"
	CodeConflict          Code = "CONFLICT"
	CodeInvalidTransition Code = "INVALID_TRANSITION"
	CodeStaleAttempt      Code = "STALE_ATTEMPT"
	CodePayloadTooLarge   Code = "PAYLOAD_TOO_LARGE"
	CodeInvalidPairing    Code = "INVALID_PAIRING_TOKEN"
	CodeRuntimeRevoked    Code = "RUNTIME_REVOKED"
	CodeRuntimeOffline    Code = "RUNTIME_OFFLINE"
	CodeUnavailable       Code = "UNAVAILABLE"
	CodeRateLimited       Code = "RATE_LIMITED"
	CodeInternal          Code = "INTERNAL"
	CodeUnsupportedMedia  Code = "UNSUPPORTED_MEDIA_TYPE"
	CodeMethodNotAllowed  Code = "METHOD_NOT_ALLOWED"
	CodeTimeout           Code = "TIMEOUT"
	CodeIdempotencyReplay Code = "IDEMPOTENCY_KEY_REUSED"
	// CodeTargetNotAllowed refuses a webhook URL that reaches an internal
	// address (loopback, private, link-local…) on a platform that does not
	// allow private webhook targets.
	CodeTargetNotAllowed Code = "TARGET_NOT_ALLOWED"
	// CodeDelegationNotAllowed refuses a delegation from inside an agent's
	// work to an agent its delegation policy does not name.
	CodeDelegationNotAllowed Code = "DELEGATION_NOT_ALLOWED"
	// CodeNoSealingKey refuses environment variables for an agent they
	// cannot be sealed for: it has no active runtime, or its runtime was
	// paired before runtimes had a sealing key (it must pair again).
	CodeNoSealingKey Code = "NO_SEALING_KEY"
	// CodeBudgetExceeded refuses a run for an agent whose daily budget
	// is spent (mesh.Budget, docs/usage.md).
	CodeBudgetExceeded Code = "BUDGET_EXCEEDED"
)

// Error is the error every service returns across the bus. It carries a code
// callers branch on and a message people read; it never carries a secret.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// Status is the current status of a task run, set on transition conflicts
	// so a caller learns why it lost.
	Status Status `json:"status,omitempty"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Is makes errors.Is(err, mesh.ErrNotFound) match any *Error with that code.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
	}
	return false
}

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Sentinels for errors.Is. They match any *Error with the same code.
var (
	ErrNotFound          = &Error{Code: CodeNotFound}
	ErrConflict          = &Error{Code: CodeConflict}
	ErrInvalidTransition = &Error{Code: CodeInvalidTransition}
	ErrStaleAttempt      = &Error{Code: CodeStaleAttempt}
	ErrUnauthorized      = &Error{Code: CodeUnauthorized}
	ErrForbidden         = &Error{Code: CodeForbidden}
	ErrInvalidRequest    = &Error{Code: CodeInvalidRequest}
	ErrRuntimeRevoked    = &Error{Code: CodeRuntimeRevoked}
	ErrRuntimeOffline    = &Error{Code: CodeRuntimeOffline}
	ErrInvalidPairing    = &Error{Code: CodeInvalidPairing}
	ErrRateLimited       = &Error{Code: CodeRateLimited}
	ErrPayloadTooLarge   = &Error{Code: CodePayloadTooLarge}
	ErrUnavailable       = &Error{Code: CodeUnavailable}
	ErrInternal          = &Error{Code: CodeInternal}
	ErrUnsupportedMedia  = &Error{Code: CodeUnsupportedMedia}
	ErrMethodNotAllowed  = &Error{Code: CodeMethodNotAllowed}
	ErrTimeout           = &Error{Code: CodeTimeout}
	ErrIdempotencyReplay = &Error{Code: CodeIdempotencyReplay}
	ErrTargetNotAllowed  = &Error{Code: CodeTargetNotAllowed}
	// ErrDelegationNotAllowed and ErrNoSealingKey match their codes too.
	ErrDelegationNotAllowed = &Error{Code: CodeDelegationNotAllowed}
	ErrNoSealingKey         = &Error{Code: CodeNoSealingKey}
	// ErrBudgetExceeded matches CodeBudgetExceeded.
	ErrBudgetExceeded = &Error{Code: CodeBudgetExceeded}
)

// AsError returns err as an *Error, wrapping unknown errors as INTERNAL with a
// generic message so internals never leak to a caller.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: "internal error"}
}
