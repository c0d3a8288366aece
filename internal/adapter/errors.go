package adapter

import (
	"errors"
	"time"
)

// Errors callers branch on.
var (
	// ErrQueueFull refuses a request when a task runs and every queue place
	// is taken (HTTP 429).
	ErrQueueFull = errors.New("adapter busy: task queue is full")
	// ErrShuttingDown refuses new and queued requests during shutdown (HTTP
	// 503) and is the failure of a task stopped because the shutdown grace
	// ran out.
	ErrShuttingDown = errors.New("adapter shutting down")
	// ErrRemoteListen refuses a non-loopback listen address without
	// Config.AllowRemote.
	ErrRemoteListen = errors.New("refusing to listen on a non-loopback address")
	// ErrRemoteNeedsAuth refuses Config.AllowRemote without Config.AuthToken.
	ErrRemoteNeedsAuth = errors.New("listening beyond loopback requires an auth token")
)

// timeoutError is the failure of a task that ran out of time.
type timeoutError struct{ after time.Duration }

// Error says how long the task had.
func (e *timeoutError) Error() string { return "timed out after " + e.after.String() }

// errClientGone is why a task stopped when its client disconnected.
var errClientGone = errors.New("the runtime disconnected before the task finished")
