package a2aserver

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/errordetails"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
)

// This file is the A2A endpoint's one place for errors: which JSON-RPC code,
// HTTP status and reason each A2A error has in each protocol version, how
// platform errors become A2A errors, and how the errors the endpoint raises
// itself (before the SDK's transports see a request) are written.

// errRateLimited is a caller over its rate limit (admission refused it).
// A2A defines no error for it; the endpoint answers JSON-RPC code -31429
// (next to the SDK's -31401 and -31403) and HTTP 429 on REST, with
// Retry-After.
var errRateLimited = admission.ErrRateLimited

// errPayloadTooLarge is a body over the endpoint's cap. A2A defines no error
// for it either: JSON-RPC code -31413, HTTP 413 on both bindings.
var errPayloadTooLarge = errors.New("payload too large")

// Errors the endpoint raises itself, with the messages clients see.
var (
	errUnknownContext = a2a.NewError(a2a.ErrInvalidParams, "contextId must be a context this agent gave you (or left out to start a new one)")
	errTaskNotFound   = a2a.NewError(a2a.ErrTaskNotFound, "task not found")
	a2aInternal       = a2a.NewError(a2a.ErrInternalError, "internal error")
)

// errorKind is how one A2A error appears on the wire.
type errorKind struct {
	err    error
	code   int    // JSON-RPC code (both versions)
	status int    // HTTP status (REST)
	grpc   string // status name in the REST error body (AIP-193)
}

// errorKinds maps A2A errors to their codes: spec 1.0 §5.4 for the HTTP
// statuses, §9.5 / 0.3 §8 for the JSON-RPC codes. The SDK's REST transport
// answers some of them with other statuses (400 for not cancelable and for
// content type), which wire.go corrects from this table.
var errorKinds = []errorKind{
	{a2a.ErrParseError, -32700, http.StatusBadRequest, "INVALID_ARGUMENT"},
	{a2a.ErrInvalidRequest, -32600, http.StatusBadRequest, "INVALID_ARGUMENT"},
	{a2a.ErrMethodNotFound, -32601, http.StatusNotFound, "NOT_FOUND"},
	{a2a.ErrInvalidParams, -32602, http.StatusBadRequest, "INVALID_ARGUMENT"},
	{a2a.ErrInternalError, -32603, http.StatusInternalServerError, "INTERNAL"},
	{a2a.ErrTaskNotFound, -32001, http.StatusNotFound, "NOT_FOUND"},
	{a2a.ErrTaskNotCancelable, -32002, http.StatusConflict, "FAILED_PRECONDITION"},
	{a2a.ErrPushNotificationNotSupported, -32003, http.StatusBadRequest, "UNIMPLEMENTED"},
	{a2a.ErrUnsupportedOperation, -32004, http.StatusBadRequest, "UNIMPLEMENTED"},
	{a2a.ErrUnsupportedContentType, -32005, http.StatusUnsupportedMediaType, "INVALID_ARGUMENT"},
	{a2a.ErrInvalidAgentResponse, -32006, http.StatusBadGateway, "INTERNAL"},
	{a2a.ErrExtendedCardNotConfigured, -32007, http.StatusBadRequest, "FAILED_PRECONDITION"},
	{a2a.ErrExtensionSupportRequired, -32008, http.StatusBadRequest, "FAILED_PRECONDITION"},
	{a2a.ErrVersionNotSupported, -32009, http.StatusBadRequest, "UNIMPLEMENTED"},
	{a2a.ErrUnauthenticated, -31401, http.StatusUnauthorized, "UNAUTHENTICATED"},
	{a2a.ErrUnauthorized, -31403, http.StatusForbidden, "PERMISSION_DENIED"},
	{errRateLimited, -31429, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED"},
	{errPayloadTooLarge, -31413, http.StatusRequestEntityTooLarge, "INVALID_ARGUMENT"},
}

// ErrorInfo reasons of the endpoint's own errors.
const (
	reasonRateLimited     = "RATE_LIMIT_EXCEEDED"
	reasonPayloadTooLarge = "PAYLOAD_TOO_LARGE"
)

// kindOf returns the wire form of err; unknown errors are internal errors.
func kindOf(err error) (errorKind, string) {
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			return k, reasonOf(k.err)
		}
	}
	return errorKinds[4], "INTERNAL_ERROR"
}

// reasonOf is the ErrorInfo reason of one of the errors of errorKinds.
func reasonOf(err error) string {
	switch err {
	case errRateLimited:
		return reasonRateLimited
	case errPayloadTooLarge:
		return reasonPayloadTooLarge
	}
	return a2a.ErrorReason(err)
}

// kindOfReason returns the wire form of an ErrorInfo reason.
func kindOfReason(reason string) (errorKind, bool) {
	for _, k := range errorKinds {
		if reasonOf(k.err) == reason {
			return k, true
		}
	}
	return errorKind{}, false
}

// toA2A turns an error of the platform (a *mesh.Error from the bus) into the
// A2A error a client sees. Errors that are A2A errors already pass. Internal
// errors are logged and answered with a generic message, so nothing of the
// platform's insides reaches a caller.
func toA2A(log zerolog.Logger, err error) error {
	if err == nil {
		return nil
	}
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			return err
		}
	}
	var me *mesh.Error
	if !errors.As(err, &me) {
		log.Error().Err(err).Msg("a2a request failed")
		return a2a.NewError(a2a.ErrInternalError, "internal error")
	}
	switch me.Code {
	case mesh.CodeNotFound:
		return a2a.NewError(a2a.ErrTaskNotFound, "task not found")
	case mesh.CodeInvalidRequest, mesh.CodeIdempotencyReplay, mesh.CodePayloadTooLarge, mesh.CodeTargetNotAllowed, mesh.CodeNoSealingKey:
		return a2a.NewError(a2a.ErrInvalidParams, me.Message)
	case mesh.CodeInvalidTransition, mesh.CodeConflict:
		return a2a.NewError(a2a.ErrUnsupportedOperation, me.Message)
	case mesh.CodeUnauthorized:
		return a2a.NewError(a2a.ErrUnauthenticated, me.Message)
	case mesh.CodeForbidden, mesh.CodeBudgetExceeded:
		return a2a.NewError(a2a.ErrUnauthorized, me.Message)
	case mesh.CodeRateLimited:
		return errRateLimited
	case mesh.CodeUnavailable, mesh.CodeTimeout:
		return a2a.NewError(a2a.ErrInternalError, "the platform is busy or restarting; retry")
	}
	log.Error().Err(err).Msg("a2a request failed")
	return a2a.NewError(a2a.ErrInternalError, "internal error")
}

// errorInfo is the google.rpc.ErrorInfo every error of the endpoint carries.
func errorInfo(reason string, meta map[string]string) *errordetails.Typed {
	if meta == nil {
		meta = map[string]string{}
	}
	meta["timestamp"] = time.Now().UTC().Format(time.RFC3339)
	return errordetails.NewErrorInfo(reason, a2a.ProtocolDomain, meta)
}

// rpcError is the JSON-RPC error object of a version: 1.0 carries details as
// a typed array (ErrorInfo first), 0.3 as an object (reason, domain and the
// metadata as fields).
func rpcError(version string, err error, meta map[string]string) map[string]any {
	k, reason := kindOf(err)
	msg := err.Error()
	out := map[string]any{"code": k.code, "message": msg}
	info := errorInfo(reason, meta)
	if version == a2atask.Version03 {
		out["data"] = flattenInfo(info)
	} else {
		out["data"] = []*errordetails.Typed{info}
	}
	return out
}

// flattenInfo turns an ErrorInfo into the object a 0.3 error's data is.
func flattenInfo(info *errordetails.Typed) map[string]any {
	data := map[string]any{"reason": info.Value["reason"], "domain": info.Value["domain"]}
	if meta, ok := info.Value["metadata"].(map[string]string); ok {
		for k, v := range meta {
			data[k] = v
		}
	}
	if meta, ok := info.Value["metadata"].(map[string]any); ok {
		for k, v := range meta {
			data[k] = v
		}
	}
	return data
}

// writeRPCError answers a JSON-RPC request the endpoint refused before the
// transport saw it. Authentication failures are HTTP 401 (both versions put
// authentication in the HTTP layer), a body over the cap 413 (the request
// was never read as JSON-RPC); everything else is HTTP 200 with the error
// object, as JSON-RPC errors are.
func writeRPCError(w http.ResponseWriter, version string, id any, err error, meta map[string]string) {
	status := http.StatusOK
	switch {
	case errors.Is(err, a2a.ErrUnauthenticated):
		status = http.StatusUnauthorized
	case errors.Is(err, a2a.ErrUnsupportedContentType):
		status = http.StatusUnsupportedMediaType
	case errors.Is(err, errPayloadTooLarge):
		status = http.StatusRequestEntityTooLarge
	}
	closeUnread(w, err)
	body := map[string]any{"jsonrpc": "2.0", "id": id, "error": rpcError(version, err, meta)}
	writeJSONBody(w, status, body)
}

// writeRESTError answers a REST request the endpoint refused, in the AIP-193
// status shape of spec 1.0 §11.6 (0.3 leaves the shape open; the same one
// serves it).
func writeRESTError(w http.ResponseWriter, err error, meta map[string]string) {
	k, reason := kindOf(err)
	closeUnread(w, err)
	body := map[string]any{"error": map[string]any{
		"code": k.status, "status": k.grpc, "message": err.Error(),
		"details": []*errordetails.Typed{errorInfo(reason, meta)},
	}}
	writeJSONBody(w, k.status, body)
}

// closeUnread closes the connection after a body over the cap: what is
// left of it is never read, not even the 256 KiB net/http would otherwise
// drain to keep the connection (the gateway's response writer wraps the
// one that http.MaxBytesReader would tell).
func closeUnread(w http.ResponseWriter, err error) {
	if errors.Is(err, errPayloadTooLarge) {
		w.Header().Set("Connection", "close")
	}
}

func writeJSONBody(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
