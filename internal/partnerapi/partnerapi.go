// Package partnerapi is the contract of the partner routes (seed 003):
// the Task object, its states and their strict machine, the JSON-RPC error
// catalog, and the signature of a partner's callbacks. The gateway's
// partner endpoint serves it; the delegation service speaks it to partner
// platforms and checks their callbacks.
package partnerapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// State is a Task's state (seed 003 names).
type State string

// Task states.
const (
	StateSubmitted     State = "submitted"
	StateWorking       State = "working"
	StateInputRequired State = "input-required"
	StateCompleted     State = "completed"
	StateFailed        State = "failed"
	StateCanceled      State = "canceled"
)

// transitions is seed 003's state machine, exactly.
var transitions = map[State][]State{
	StateSubmitted:     {StateWorking, StateCanceled, StateFailed},
	StateWorking:       {StateCompleted, StateFailed, StateInputRequired, StateCanceled},
	StateInputRequired: {StateWorking, StateCanceled, StateFailed},
}

// Valid reports whether s is a state of the machine.
func (s State) Valid() bool {
	switch s {
	case StateSubmitted, StateWorking, StateInputRequired, StateCompleted, StateFailed, StateCanceled:
		return true
	}
	return false
}

// Terminal reports whether no transition leaves s.
func (s State) Terminal() bool {
	return s == StateCompleted || s == StateFailed || s == StateCanceled
}

// CanTransition reports whether the machine allows from -> to.
func CanTransition(from, to State) bool {
	for _, next := range transitions[from] {
		if next == to {
			return true
		}
	}
	return false
}

// StateOf is the Task state of a run status.
func StateOf(s mesh.Status) State {
	switch s {
	case mesh.StatusRunning, mesh.StatusApprovalRequired:
		// Only the agent's owner decides an approval: to a partner the
		// run is still working.
		return StateWorking
	case mesh.StatusInputRequired:
		return StateInputRequired
	case mesh.StatusCompleted:
		return StateCompleted
	case mesh.StatusFailed:
		return StateFailed
	case mesh.StatusCanceled:
		return StateCanceled
	}
	return StateSubmitted
}

// Task is seed 003's Task object.
type Task struct {
	TaskID              string          `json:"taskId"`
	State               State           `json:"state"`
	Method              string          `json:"method"`
	Params              json.RawMessage `json:"params,omitempty"`
	Result              any             `json:"result,omitempty"`
	Error               *Error          `json:"error,omitempty"`
	SessionID           string          `json:"sessionId,omitempty"`
	ClientAgentID       string          `json:"clientAgentId,omitempty"`
	RemoteAgentID       string          `json:"remoteAgentId,omitempty"`
	CreatedAt           string          `json:"createdAt"`
	UpdatedAt           string          `json:"updatedAt"`
	CompletedAt         string          `json:"completedAt,omitempty"`
	EstimatedCompletion string          `json:"estimatedCompletion,omitempty"`
	Progress            *float64        `json:"progress,omitempty"`
}

// Error is a JSON-RPC error object (seed 003's JsonRpcResponse error).
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Error makes an *Error an error.
func (e *Error) Error() string { return e.Message }

// JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// The A2A-specific error codes of seed 003, each with exactly its meaning.
const (
	CodeTaskNotFound           = -32000
	CodeTaskAlreadyCompleted   = -32001
	CodeTaskCanceled           = -32002
	CodeInvalidTaskState       = -32003
	CodeAgentNotFound          = -32004
	CodeCapabilityNotSupported = -32005
	CodeAuthenticationFailed   = -32006
	CodeRateLimitExceeded      = -32007
	CodeWebhookDeliveryFailed  = -32008
	CodeInvalidAgentCard       = -32009
	CodeTaskTimeout            = -32010
)

// Meanings are the catalog's names, by code.
var Meanings = map[int]string{
	CodeParseError:             "Parse error",
	CodeInvalidRequest:         "Invalid Request",
	CodeMethodNotFound:         "Method not found",
	CodeInvalidParams:          "Invalid params",
	CodeInternalError:          "Internal error",
	CodeTaskNotFound:           "Task not found",
	CodeTaskAlreadyCompleted:   "Task already completed",
	CodeTaskCanceled:           "Task canceled",
	CodeInvalidTaskState:       "Invalid task state",
	CodeAgentNotFound:          "Agent not found",
	CodeCapabilityNotSupported: "Capability not supported",
	CodeAuthenticationFailed:   "Authentication failed",
	CodeRateLimitExceeded:      "Rate limit exceeded",
	CodeWebhookDeliveryFailed:  "Webhook delivery failed",
	CodeInvalidAgentCard:       "Invalid agent card",
	CodeTaskTimeout:            "Task timeout",
}

// Headers of a partner's callback to POST /a2a/webhook.
const (
	// HeaderPartnerID names the partner (its id on this platform).
	HeaderPartnerID = "X-A2A-Partner-Id"
	// HeaderTimestamp is the time of signing, in Unix seconds.
	HeaderTimestamp = "X-A2A-Timestamp"
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256, keyed with the
	// partner's shared secret, of "<timestamp>.<raw body>".
	HeaderSignature = "X-A2A-Signature"
)

// Sign returns the signature header value of a callback body.
func Sign(secret, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp + "."))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// ErrBadSignature refuses a callback that was not signed with the secret,
// or whose timestamp is outside the tolerance.
var ErrBadSignature = errors.New("partnerapi: invalid callback signature")

// Verify checks a callback's signature and that its timestamp is within
// tolerance of now (a captured callback cannot be replayed later).
func Verify(secret, timestamp, signature string, body []byte, tolerance time.Duration, now time.Time) error {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || math.Abs(float64(now.Unix()-ts)) > tolerance.Seconds() {
		return ErrBadSignature
	}
	if !hmac.Equal([]byte(signature), []byte(Sign(secret, timestamp, body))) {
		return ErrBadSignature
	}
	return nil
}

// Time formats a time as the Task's timestamps are (RFC 3339, UTC,
// milliseconds).
func Time(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
