package envelope

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
)

// This file is the envelope endpoint's one place for errors: the codes of an
// error payload, the HTTP status each is answered with, and how platform
// errors become them.

// payloadError is the payload of a response that failed.
type payloadError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Reason is the failed execution's error code (a task run's).
	Reason string `json:"reason,omitempty"`
	// ExecutionID and ExecutionTime describe a failed execution.
	ExecutionID   string `json:"executionId,omitempty"`
	ExecutionTime *int64 `json:"executionTime,omitempty"`
}

// Error payload codes.
const (
	codeInvalidEnvelope    = "INVALID_ENVELOPE"
	codeUnsupportedVersion = "UNSUPPORTED_VERSION"
	codeMethodNotFound     = "METHOD_NOT_FOUND"
	codeInvalidParams      = "INVALID_PARAMS"
	codeUnauthenticated    = "UNAUTHENTICATED"
	codeForbidden          = "FORBIDDEN"
	codeAgentNotFound      = "AGENT_NOT_FOUND"
	codeAgentUnavailable   = "AGENT_UNAVAILABLE"
	codeRateLimited        = "RATE_LIMITED"
	codeExecutionFailed    = "EXECUTION_FAILED"
	codePayloadTooLarge    = "PAYLOAD_TOO_LARGE"
	codeUnsupportedMedia   = "UNSUPPORTED_MEDIA_TYPE"
	codeUnavailable        = "UNAVAILABLE"
	codeInternal           = "INTERNAL"
	// codeNoSealingKey: environmentVariables for an agent without an
	// active runtime that has a sealing key (mesh.CodeNoSealingKey).
	codeNoSealingKey = "NO_SEALING_KEY"
)

// statusOf is the HTTP status of each error payload code. A failed
// execution is 200: the request was processed, and the payload says how
// the execution went.
func statusOf(code string) int {
	switch code {
	case codeInvalidEnvelope, codeUnsupportedVersion, codeMethodNotFound, codeInvalidParams:
		return http.StatusBadRequest
	case codeUnauthenticated:
		return http.StatusUnauthorized
	case codeForbidden:
		return http.StatusForbidden
	case codeAgentNotFound:
		return http.StatusNotFound
	case codeRateLimited:
		return http.StatusTooManyRequests
	case codePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case codeUnsupportedMedia:
		return http.StatusUnsupportedMediaType
	case codeAgentUnavailable, codeUnavailable:
		return http.StatusServiceUnavailable
	case codeNoSealingKey:
		return http.StatusConflict
	case codeExecutionFailed:
		return http.StatusOK
	}
	return http.StatusInternalServerError
}

func invalid(msg string) *payloadError { return &payloadError{Code: codeInvalidEnvelope, Message: msg} }

// classify turns what went wrong into an error payload.
func classify(log zerolog.Logger, err error) *payloadError {
	var pe *payloadError
	if errors.As(err, &pe) {
		return pe
	}
	switch {
	case admission.IsUnauthenticated(err):
		return &payloadError{Code: codeUnauthenticated, Message: admission.ErrorMessage(err)}
	case errors.Is(err, a2a.ErrUnauthorized):
		return &payloadError{Code: codeForbidden, Message: admission.ErrorMessage(err)}
	case errors.Is(err, admission.ErrRateLimited):
		return &payloadError{Code: codeRateLimited, Message: err.Error()}
	}
	var me *mesh.Error
	if !errors.As(err, &me) {
		log.Error().Err(err).Msg("envelope request failed")
		return &payloadError{Code: codeInternal, Message: "internal error"}
	}
	switch me.Code {
	case mesh.CodeInvalidRequest, mesh.CodeIdempotencyReplay, mesh.CodePayloadTooLarge:
		return &payloadError{Code: codeInvalidParams, Message: me.Message}
	case mesh.CodeNotFound:
		return &payloadError{Code: codeAgentNotFound, Message: me.Message}
	case mesh.CodeUnauthorized:
		return &payloadError{Code: codeUnauthenticated, Message: me.Message}
	case mesh.CodeForbidden, mesh.CodeBudgetExceeded:
		return &payloadError{Code: codeForbidden, Message: me.Message}
	case mesh.CodeUnavailable, mesh.CodeTimeout:
		return &payloadError{Code: codeUnavailable, Message: me.Message}
	case mesh.CodeNoSealingKey:
		return &payloadError{Code: codeNoSealingKey, Message: me.Message}
	}
	log.Error().Err(err).Msg("envelope request failed")
	return &payloadError{Code: codeInternal, Message: "internal error"}
}

// Error makes a payload error usable as an error.
func (e *payloadError) Error() string { return e.Code + ": " + e.Message }

// zerologNop logs nothing: classify on a refusal the caller already has.
var zerologNop = zerolog.Nop()

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
