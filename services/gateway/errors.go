package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/a2amesh/a2amesh/mesh"
)

// errorBody is every error answer of the platform REST API.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    mesh.Code   `json:"code"`
	Message string      `json:"message"`
	Status  mesh.Status `json:"status,omitempty"`
}

// httpStatus is the one mapping from error codes to HTTP statuses.
func httpStatus(code mesh.Code) int {
	switch code {
	case mesh.CodeInvalidRequest, mesh.CodeTargetNotAllowed:
		return http.StatusBadRequest
	case mesh.CodeUnauthorized, mesh.CodeInvalidPairing, mesh.CodeRuntimeRevoked:
		// 401 tells a runtime to pair the same agent again (seed 001 §4.7).
		return http.StatusUnauthorized
	case mesh.CodeForbidden, mesh.CodeDelegationNotAllowed:
		return http.StatusForbidden
	case mesh.CodeNotFound:
		return http.StatusNotFound
	case mesh.CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case mesh.CodeConflict, mesh.CodeInvalidTransition, mesh.CodeStaleAttempt, mesh.CodeRuntimeOffline, mesh.CodeIdempotencyReplay, mesh.CodeNoSealingKey:
		return http.StatusConflict
	case mesh.CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case mesh.CodeUnsupportedMedia:
		return http.StatusUnsupportedMediaType
	case mesh.CodeRateLimited, mesh.CodeBudgetExceeded:
		return http.StatusTooManyRequests
	case mesh.CodeUnavailable:
		return http.StatusServiceUnavailable
	case mesh.CodeTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// writeError answers with the JSON error body. Internal errors are logged and
// answered with a generic message, so internals never reach a caller.
func (g *Gateway) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := mesh.AsError(err)
	if e.Code == mesh.CodeInternal {
		g.log.Error().Ctx(r.Context()).Err(err).Str("method", r.Method).Str("path", r.URL.Path).Msg("request failed")
	}
	switch e.Code {
	case mesh.CodeRateLimited:
		w.Header().Set("Retry-After", strconv.Itoa(1))
	case mesh.CodeUnavailable:
		// Nothing was stored (a node was lost, a leader is being elected):
		// the same request with the same idempotency key may be sent again.
		w.Header().Set("Retry-After", strconv.Itoa(2))
	}
	writeJSON(w, httpStatus(e.Code), errorBody{Error: errorDetail{Code: e.Code, Message: e.Message, Status: e.Status}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
