package partner

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/internal/partnerapi"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
)

// This file is the partner endpoint's one place for errors: which seed 003
// code (-32700..-32603, -32000..-32010) and HTTP status each refusal and
// each platform error has, and how both shapes are written: JSON-RPC error
// envelopes on /a2a/message, {"error": ...} bodies on the other routes.

// endpointError is a refusal of the endpoint: a seed 003 code, the HTTP status it
// is answered with, and a message for people.
type endpointError struct {
	code   int
	status int
	msg    string
	data   any
}

// Error makes a refusal usable as an error.
func (e *endpointError) Error() string { return e.msg }

func refuse(code, status int, format string, args ...any) *endpointError {
	return &endpointError{code: code, status: status, msg: fmt.Sprintf(format, args...)}
}

// notAvailable is seed 003's 503 "A2A adapter not available": the endpoint
// answers it when a service it needs is not running, and when a task needs
// an agent that can run it now (detail says which).
const notAvailable = "A2A adapter not available"

func unavailable(detail string) *endpointError {
	return &endpointError{code: partnerapi.CodeInternalError, status: http.StatusServiceUnavailable, msg: notAvailable, data: map[string]any{"detail": detail}}
}

// Refusals the endpoint makes itself.
var (
	errAgentNotFound = refuse(partnerapi.CodeAgentNotFound, http.StatusNotFound, "Agent not found: no agent with this id that this credential reaches")
	errTaskNotFound  = refuse(partnerapi.CodeTaskNotFound, http.StatusNotFound, "Task not found")
)

// classify is the one mapping from what went wrong to the endpoint's answer.
// internal is the message of an internal error on the route at hand (seed
// 003 gives each route its own).
func classify(log zerolog.Logger, err error, internal string) *endpointError {
	var de *endpointError
	if errors.As(err, &de) {
		return de
	}
	switch {
	case admission.IsUnauthenticated(err):
		return refuse(partnerapi.CodeAuthenticationFailed, http.StatusUnauthorized, "Authentication failed: %s", admission.ErrorMessage(err))
	case errors.Is(err, a2a.ErrUnauthorized):
		return refuse(partnerapi.CodeAuthenticationFailed, http.StatusForbidden, "Authentication failed: %s", admission.ErrorMessage(err))
	case errors.Is(err, admission.ErrRateLimited):
		return refuse(partnerapi.CodeRateLimitExceeded, http.StatusTooManyRequests, "Rate limit exceeded: %s", err.Error())
	}
	var me *mesh.Error
	if !errors.As(err, &me) {
		log.Error().Err(err).Msg("partner request failed")
		return refuse(partnerapi.CodeInternalError, http.StatusInternalServerError, "%s", internal)
	}
	switch me.Code {
	case mesh.CodeNotFound:
		return errTaskNotFound
	case mesh.CodeInvalidRequest, mesh.CodePayloadTooLarge, mesh.CodeIdempotencyReplay:
		return refuse(partnerapi.CodeInvalidParams, http.StatusBadRequest, "Invalid params: %s", me.Message)
	case mesh.CodeInvalidTransition, mesh.CodeConflict:
		return stateError(me.Status, me.Message)
	case mesh.CodeUnauthorized:
		return refuse(partnerapi.CodeAuthenticationFailed, http.StatusUnauthorized, "Authentication failed: %s", me.Message)
	case mesh.CodeForbidden:
		return refuse(partnerapi.CodeAuthenticationFailed, http.StatusForbidden, "Authentication failed: %s", me.Message)
	case mesh.CodeRateLimited:
		return refuse(partnerapi.CodeRateLimitExceeded, http.StatusTooManyRequests, "Rate limit exceeded")
	case mesh.CodeBudgetExceeded:
		return refuse(partnerapi.CodeRateLimitExceeded, http.StatusTooManyRequests, "Budget exceeded: %s", me.Message)
	case mesh.CodeUnavailable, mesh.CodeTimeout:
		return unavailable(me.Message)
	}
	log.Error().Err(err).Msg("partner request failed")
	return refuse(partnerapi.CodeInternalError, http.StatusInternalServerError, "%s", internal)
}

// stateError is the refusal of an operation the task's state does not
// allow: seed 003 has a code for a completed and for a canceled task, and
// one for every other state.
func stateError(status mesh.Status, detail string) *endpointError {
	switch status {
	case mesh.StatusCompleted:
		return refuse(partnerapi.CodeTaskAlreadyCompleted, http.StatusConflict, "Task already completed")
	case mesh.StatusCanceled:
		return refuse(partnerapi.CodeTaskCanceled, http.StatusConflict, "Task canceled")
	}
	return refuse(partnerapi.CodeInvalidTaskState, http.StatusConflict, "Invalid task state: %s", detail)
}

// runErrorCode is the seed 003 code of a failed or canceled run's error.
func runErrorCode(run *mesh.TaskRun) int {
	switch {
	case run.Status == mesh.StatusCanceled:
		return partnerapi.CodeTaskCanceled
	case run.Error != nil && run.Error.Code == mesh.ReasonDeadlineExceeded:
		return partnerapi.CodeTaskTimeout
	}
	return partnerapi.CodeInternalError
}

// rpcResponse is a JSON-RPC 2.0 response (seed 003's JsonRpcResponse).
type rpcResponse struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      any               `json:"id"`
	Result  any               `json:"result,omitempty"`
	Error   *partnerapi.Error `json:"error,omitempty"`
}

// writeRPCError answers /a2a/message with a JSON-RPC error envelope. Its
// HTTP status is 200, as for every JSON-RPC answer, except for what the
// transport itself decides: 401 and 403 (credentials), 429 (rate limit),
// 503 (adapter not available) and 500 (internal error).
func writeRPCError(w http.ResponseWriter, id any, e *endpointError) {
	status := http.StatusOK
	switch e.status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusInternalServerError:
		status = e.status
	}
	msg := e.msg
	if e.status == http.StatusInternalServerError {
		msg = "Internal error"
	}
	writeJSON(w, status, rpcResponse{JSONRPC: "2.0", ID: id, Error: &partnerapi.Error{Code: e.code, Message: msg, Data: e.data}})
}

// errorBody is the error answer of the routes other than /a2a/message:
// seed 003's {"error": "..."}, with the catalog code and details.
type errorBody struct {
	Error  string `json:"error"`
	Code   int    `json:"code,omitempty"`
	Detail any    `json:"detail,omitempty"`
}

func writeError(w http.ResponseWriter, e *endpointError) {
	body := errorBody{Error: e.msg, Code: e.code}
	if m, ok := e.data.(map[string]any); ok {
		body.Detail = m["detail"]
	}
	if e.status == http.StatusServiceUnavailable || e.status == http.StatusInternalServerError {
		body.Code = 0
	}
	writeJSON(w, e.status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
