package meshapi

import (
	"encoding/json"
	"errors"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/jetstream"
)

// ClaimQueued turns a fetched queue message into a claimed run, with claim
// doing the claim (over the bus for a runtime on NATS, in the task queue
// for one that pulls over HTTP), and settles the message: acked when the
// run was claimed, terminated when it can never be (an unreadable message,
// or see Unclaimable), offered again otherwise. It returns nil, nil for a
// message that was settled without a run.
func ClaimQueued(msg jetstream.Msg, claim func(QueueMessage) (*mesh.TaskRun, error)) (*mesh.TaskRun, error) {
	var qm QueueMessage
	if err := json.Unmarshal(msg.Data(), &qm); err != nil {
		_ = msg.Term()
		return nil, nil
	}
	run, err := claim(qm)
	switch {
	case err == nil:
		// The record is the truth; a failed ack only means the message is
		// offered again later and refused then.
		_ = msg.Ack()
		return run, nil
	case Unclaimable(err):
		_ = msg.Term()
		return nil, nil
	default:
		_ = msg.Nak()
		return nil, err
	}
}

// Unclaimable reports whether a claim's error means the queue message can
// never be claimed (the run moved on, the attempt is over, the run is
// gone), so the message is terminated rather than offered again.
func Unclaimable(err error) bool {
	var e *mesh.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case mesh.CodeInvalidTransition, mesh.CodeStaleAttempt, mesh.CodeNotFound:
		return true
	}
	return false
}
