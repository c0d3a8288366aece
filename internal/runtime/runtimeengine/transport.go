package runtimeengine

import (
	"context"
	"errors"

	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Transport is how a runtime talks to the platform: over NATS directly (the
// default) or over the REST API of seed 001. Both have the same semantics.
type Transport interface {
	// Name is "nats" or "http".
	Name() string
	// Heartbeat marks the runtime online (and says whether its adapter
	// answers); the platform also renews the leases of the runs listed.
	Heartbeat(ctx context.Context, req meshapi.HeartbeatRequest) error
	// NextUpTo waits for pending runs and claims up to n of them (an
	// engine with n free slots): one request for work, one claim. It
	// returns none when its wait ended with nothing to claim, ctx's error
	// when ctx ended, and never more than n: the engine
	// counts its free slots by what it returns, and a run beyond them
	// would free, when it ended, a slot it never took, so that the engine
	// ran more than its concurrency from then on.
	NextUpTo(ctx context.Context, n int) ([]*mesh.TaskRun, error)
	// Release gives back a claimed run that was never started.
	Release(ctx context.Context, run *mesh.TaskRun) error
	// Renew extends the leases of running runs and returns those the runtime
	// no longer holds (canceled, reaped or ended elsewhere).
	Renew(ctx context.Context, ids []string) (lost []string, err error)
	Progress(ctx context.Context, req meshapi.ProgressRequest) error
	Complete(ctx context.Context, req meshapi.CompleteRequest) error
	Fail(ctx context.Context, req meshapi.FailRequest) error
	// WaitCanceled waits for any of ids (runs the runtime holds), or of
	// the runs it claims meanwhile, to be canceled on the platform, and
	// names those that were; none when its wait ended first. Over NATS it
	// is a request that waits; over HTTP the runtime's event stream, which
	// the transport follows from its start, tells.
	WaitCanceled(ctx context.Context, ids []string) ([]string, error)
	// Goodbye says the runtime is stopping on purpose, so the platform
	// shows it offline at once.
	Goodbye(ctx context.Context) error
	// Hello asks the platform for the agent's current instructions and
	// timings; it changes nothing.
	Hello(ctx context.Context) (*meshapi.HelloResponse, error)
	// ClaimedInstructions returns the agent's instructions as the last
	// claim brought them (over NATS, the instructions themselves; over
	// HTTP, only whether they are still known, those the runtime knows),
	// and false when the claim did not say (a platform that does not, or
	// instructions that changed since known), so the engine need not ask
	// for them (Hello) before each task.
	ClaimedInstructions(known string) (string, bool)
	// Artifacts stores the artifacts of the runs: with the artifacts
	// service on the runtime's own subjects (NATS), or through the REST
	// API's upload, which hands them to the same service (HTTP).
	Artifacts() ArtifactWriter
	// Connection says where the transport is connected now (a2a-runtime
	// status shows it).
	Connection() profile.Connection
	// Sender sends the runtime's operations of the table (meshapi.Ops):
	// on the runtime's own subjects, or to their REST bindings. Whatever is
	// not particular to NATS or HTTP is sent through it, the same way over
	// both (operations).
	Sender() meshapi.Sender
	// Close gives back the runs claimed for lost answers and ends the
	// connection; closing again does nothing.
	Close()
}

// operations are the Transport methods both transports share: each sends
// an operation of the table through the transport's Sender.
type operations struct{ send meshapi.Sender }

func (o operations) Sender() meshapi.Sender { return o.send }

func (o operations) Hello(ctx context.Context) (*meshapi.HelloResponse, error) {
	return meshapi.Send(ctx, o.send, meshapi.OpRuntimeHello, meshapi.Empty{})
}

func (o operations) Heartbeat(ctx context.Context, req meshapi.HeartbeatRequest) error {
	_, err := meshapi.Send(ctx, o.send, meshapi.OpRuntimeHeartbeat, req)
	return err
}

func (o operations) Goodbye(ctx context.Context) error {
	_, err := meshapi.Send(ctx, o.send, meshapi.OpRuntimeGoodbye, meshapi.Empty{})
	return err
}

func (o operations) Release(ctx context.Context, run *mesh.TaskRun) error {
	_, err := meshapi.Send(ctx, o.send, meshapi.OpRuntimeRelease, meshapi.ReleaseRequest{TaskRunID: run.ID, Attempt: run.Attempt})
	return err
}

func (o operations) Progress(ctx context.Context, req meshapi.ProgressRequest) error {
	_, err := meshapi.Send(ctx, o.send, meshapi.OpRuntimeProgress, req)
	return err
}

func (o operations) Complete(ctx context.Context, req meshapi.CompleteRequest) error {
	_, err := meshapi.Send(ctx, o.send, meshapi.OpRuntimeComplete, req)
	return err
}

func (o operations) Fail(ctx context.Context, req meshapi.FailRequest) error {
	_, err := meshapi.Send(ctx, o.send, meshapi.OpRuntimeFail, req)
	return err
}

// Delegation returns the delegation operations of the runs the runtime
// holds, sent through tr: the platform of the run's tool server, over
// either transport.
func Delegation(tr Transport) meshapi.InHost { return meshapi.NewInHost(tr.Sender()) }

// IsAuthError reports whether the platform refused the runtime's credential:
// the runtime must stop and the same agent must be paired again.
func IsAuthError(err error) bool {
	return errors.Is(err, mesh.ErrUnauthorized) || errors.Is(err, mesh.ErrRuntimeRevoked) || errors.Is(err, mesh.ErrForbidden)
}

// isFinalAnswer reports whether the platform answered a report in a way that
// will not change if it is sent again (the run ended otherwise, or the report
// was malformed): such reports leave the outbox.
func isFinalAnswer(err error) bool {
	for _, final := range []error{mesh.ErrInvalidTransition, mesh.ErrStaleAttempt, mesh.ErrNotFound, mesh.ErrInvalidRequest, mesh.ErrConflict} {
		if errors.Is(err, final) {
			return true
		}
	}
	return false
}
