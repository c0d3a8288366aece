package meshapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go"
)

// Runtime operations arrive on bus.RuntimeSubject(agent, runtime, op); the
// subject names the runtime, so bodies do not.

// HelloResponse tells a runtime how to work: its identity and timings.
type HelloResponse struct {
	AgentID            string `json:"agent_id"`
	RuntimeID          string `json:"runtime_id"`
	LeaseMS            int64  `json:"lease_ms"`
	HeartbeatTimeoutMS int64  `json:"heartbeat_timeout_ms"`
	// Instructions are the agent account's business instructions.
	Instructions string `json:"instructions,omitempty"`
}

// PullRequest claims the next pending run, waiting up to Wait for one.
type PullRequest struct {
	Wait time.Duration `json:"wait,omitempty"`
	// Key, when given (a UUID in lower-case hex), is chosen by the runtime
	// for this pull, and the run is claimed under it. A runtime that did
	// not get the answer pulls with Recover and the same Key, and gets the
	// run claimed under it that it still holds, at once, or none.
	Key     string `json:"key,omitempty"`
	Recover bool   `json:"recover,omitempty"`
}

// PullResponse holds the claimed run, or nothing when none was pending.
type PullResponse struct {
	TaskRun *mesh.TaskRun `json:"task_run,omitempty"`
	// InstructionsDigest is InstructionsDigest of the agent's instructions
	// as the task queue knew them when it answered, given with a claimed
	// run: the REST pull passes it on (HeaderInstructionsDigest), so a
	// runtime asks for the instructions (hello) only when they changed.
	InstructionsDigest string `json:"instructions_digest,omitempty"`
}

// HeaderInstructionsDigest is the REST pull answer's header that carries
// PullResponse.InstructionsDigest.
const HeaderInstructionsDigest = "Mesh-Instructions-Digest"

// InstructionsDigest names an agent's instructions: equal instructions
// have equal digests, and a runtime compares the digest a pull brings with
// that of the instructions it knows.
func InstructionsDigest(instructions string) string {
	sum := sha256.Sum256([]byte(instructions))
	return hex.EncodeToString(sum[:16])
}

// OfferRequest asks for pending runs of the runtime's agent, waiting up to
// Wait for one, and names up to Max of them (default 1, at most MaxOffers).
//
// With Claim, the runs pending when the request arrives are claimed at
// once, under Key (OfferResponse.Claimed): one request instead of an offer
// and a claim. Runs that arrive while it waits are only named, as without
// Claim, so a request given up on while it waits leaves nothing claimed. A
// runtime that did not get the answer to a claiming request asks with
// Recover and the same Key, and gets the runs claimed under it, which it
// then holds (or releases); nothing else is claimed or named then.
type OfferRequest struct {
	Wait    time.Duration `json:"wait,omitempty"`
	Max     int           `json:"max,omitempty"`
	Claim   bool          `json:"claim,omitempty"`
	Recover bool          `json:"recover,omitempty"`
	// Key is chosen by the runtime for one claiming request (an id:
	// mesh.ValidID); required with Claim and Recover.
	Key string `json:"key,omitempty"`
}

// MaxOffers bounds how many runs one offer names.
const MaxOffers = 100

// MaxWait is the longest a runtime's request may wait on the task queue:
// a long-poll offer or pull, a wait for cancels or for an approval.
const MaxWait = 55 * time.Second

// MaxHandling bounds the task queue's work on one request of a runtime.
// A claim is stored within it of the request reaching the task queue, or
// not at all: while the store is unavailable (a node lost, leaders being
// elected) that can be long after the request's own wait, so a runtime
// whose answer was lost asks about its claims for that long.
const MaxHandling = MaxWait + 5*time.Second

// Offer names a pending run and the attempt a claim of it starts. It
// reserves nothing the record does not: a claim decides, so an offer that
// was lost, or made to two runtimes, costs nothing.
type Offer struct {
	TaskRunID string `json:"task_run_id"`
	Attempt   int    `json:"attempt"`
}

// OfferResponse lists the offered runs, oldest first; none when the wait
// ended without one.
type OfferResponse struct {
	Offers []Offer `json:"offers,omitempty"`
	// Claimed are the runs claimed for the runtime (a request with Claim or
	// Recover), oldest first; Instructions are then given as with
	// ClaimManyResponse.
	Claimed      []mesh.TaskRun `json:"claimed,omitempty"`
	Instructions *string        `json:"instructions,omitempty"`
}

// ClaimManyRequest claims several offered runs in one request (at most
// MaxOffers). Each claim is decided on its own, as a ClaimRequest is.
type ClaimManyRequest struct {
	Claims []ClaimRequest `json:"claims"`
	// Key, when given (an id: mesh.ValidID), is chosen by the runtime for
	// this request, and the runs are claimed under it: a runtime that did
	// not get the answer asks for them as for an offer's (OfferRequest's
	// Recover).
	Key string `json:"key,omitempty"`
}

// ClaimManyResponse holds the runs claimed, in the order asked, and why
// each of the others was not.
type ClaimManyResponse struct {
	Claimed []mesh.TaskRun `json:"claimed"`
	Refused []ClaimRefusal `json:"refused,omitempty"`
	// Instructions are the agent's instructions as the task queue knew
	// them when it answered, given with the runs claimed so the runtime
	// need not ask for them before each task (Hello). Absent when nothing
	// was claimed.
	Instructions *string `json:"instructions,omitempty"`
}

// ClaimRefusal is one claim of a ClaimManyRequest that did not take its run.
type ClaimRefusal struct {
	TaskRunID string      `json:"task_run_id"`
	Error     *mesh.Error `json:"error"`
}

// ClaimRequest claims an offered run.
type ClaimRequest struct {
	TaskRunID string `json:"task_run_id"`
	Attempt   int    `json:"attempt"`
}

// ReleaseRequest gives back a claimed run that never reached the adapter
// (its claim reply could not be delivered); the attempt does not count.
type ReleaseRequest struct {
	TaskRunID string `json:"task_run_id"`
	Attempt   int    `json:"attempt"`
	// Key, when set, gives the run back only if it is held under the
	// claiming request of that key and the runtime has not asked for it
	// under the key since (Recover, of an offer or a pull): the gateway's
	// give-back of a run claimed for a pull whose runtime left, which must
	// not take a run from under a runtime that came back for it.
	Key string `json:"key,omitempty"`
}

// RenewRequest extends the leases of runs the runtime is working on.
type RenewRequest struct {
	TaskRunIDs []string `json:"task_run_ids"`
	// Attempt, when given, is the attempt the runtime holds of every run
	// named: a lease of another attempt is not renewed (reported lost).
	Attempt int `json:"attempt,omitempty"`
}

// RenewResponse lists which leases were renewed and which runs are no longer
// the runtime's (canceled, reaped, or ended): it should stop working on those.
type RenewResponse struct {
	Renewed []string `json:"renewed"`
	Lost    []string `json:"lost,omitempty"`
	// LeaseExpiresAt is the new expiry of the renewed leases.
	LeaseExpiresAt time.Time `json:"lease_expires_at"`
}

// CanceledRequest waits up to Wait for a run the runtime holds to be
// canceled. TaskRunIDs are the runs the runtime holds as it asks: any of
// them already canceled is named at once; runs it claims while the request
// waits are covered too.
type CanceledRequest struct {
	TaskRunIDs []string      `json:"task_run_ids"`
	Wait       time.Duration `json:"wait"`
}

// CanceledResponse names the runtime's runs that were canceled; none when
// the wait ended first.
type CanceledResponse struct {
	Canceled []string `json:"canceled,omitempty"`
}

// ProgressRequest reports progress on a run (seed 001 §4.4); it renews the lease.
type ProgressRequest struct {
	TaskRunID string   `json:"task_run_id"`
	Attempt   int      `json:"attempt,omitempty"`
	Message   string   `json:"message,omitempty"`
	Percent   *float64 `json:"percent,omitempty"`
}

// CompleteRequest ends a run's turn with its output.
type CompleteRequest struct {
	TaskRunID string          `json:"task_run_id"`
	Attempt   int             `json:"attempt,omitempty"`
	Output    json.RawMessage `json:"output"`
	// InputRequired ends the turn asking the caller for more input (the
	// question is in output.text): the run moves to input-required instead
	// of completed, and a caller's answer continues it (OpTaskContinue).
	InputRequired bool `json:"input_required,omitempty"`
}

// FailRequest ends a run as failed; Output carries at least "error".
type FailRequest struct {
	TaskRunID string          `json:"task_run_id"`
	Attempt   int             `json:"attempt,omitempty"`
	Output    json.RawMessage `json:"output"`
}

// ReportAck acknowledges a runtime's progress, complete or fail report.
type ReportAck struct {
	TaskRunID string      `json:"task_run_id"`
	Status    mesh.Status `json:"status"`
	Attempt   int         `json:"attempt"`
	Revision  uint64      `json:"revision"`
}

// AckOf acknowledges a report on run.
func AckOf(run *mesh.TaskRun) *ReportAck {
	return &ReportAck{TaskRunID: run.ID, Status: run.Status, Attempt: run.Attempt, Revision: run.Revision}
}

// TaskRunReply is a run after an operation.
type TaskRunReply struct {
	TaskRun mesh.TaskRun `json:"task_run"`
}

// Runtime returns a client that speaks for one runtime. Over a runtime's own
// NATS connection the server only lets it use its own ids; the gateway uses it
// on behalf of runtimes it has authenticated.
func (c *Client) Runtime(agentID, runtimeID string) *RuntimeClient {
	rc := &RuntimeClient{nc: c.nc, agentID: agentID, runtimeID: runtimeID}
	rc.InHost = NewInHost(rc)
	return rc
}

// RuntimeClient sends runtime operations for one runtime on the bus.
type RuntimeClient struct {
	// InHost sends the delegation operations of the runs it holds.
	InHost
	nc        *nats.Conn
	agentID   string
	runtimeID string
}

// Hello announces the runtime and returns its timings.
func (c *RuntimeClient) Hello(ctx context.Context) (*HelloResponse, error) {
	return Send(ctx, c, OpRuntimeHello, Empty{})
}

// Connection asks where the runtime should connect now: what pairing
// would tell it today (its agent's home region may have changed since).
func (c *RuntimeClient) Connection(ctx context.Context) (*NATSConnection, error) {
	return Send(ctx, c, OpRuntimeConnection, Empty{})
}

// Heartbeat marks the runtime online and renews the leases of its running
// runs. It is sent once: a failed heartbeat is how a runtime whose
// connection is refused finds out at once to check its credential (leases
// have their own renewals, which are sent again).
func (c *RuntimeClient) Heartbeat(ctx context.Context, req HeartbeatRequest) (*HeartbeatResponse, error) {
	return Send(ctx, c, OpRuntimeHeartbeat, req)
}

// Offer waits up to req.Wait for pending runs of the agent and names them
// (or claims them: see OfferRequest); ctx must allow the wait.
func (c *RuntimeClient) Offer(ctx context.Context, req OfferRequest) (*OfferResponse, error) {
	return Send(ctx, c, OpRuntimeOffer, req)
}

// Pull claims the next pending run, waiting up to req.Wait.
func (c *RuntimeClient) Pull(ctx context.Context, req PullRequest) (*PullResponse, error) {
	return Send(ctx, c, OpRuntimePull, req)
}

// TryTimeout bounds one try of a runtime operation that is sent again until
// the caller's context ends when its answer does not come (claim and renew:
// see bus.CallIdempotent).
const TryTimeout = 3 * time.Second

// Claim claims an offered run. Claiming the same
// attempt again is answered with the run the runtime already holds, so a
// try whose answer was lost is simply sent again.
func (c *RuntimeClient) Claim(ctx context.Context, req ClaimRequest) (*mesh.TaskRun, error) {
	r, err := Send(ctx, c, OpRuntimeClaim, req)
	if err != nil {
		return nil, err
	}
	return &r.TaskRun, nil
}

// ClaimMany claims several offered runs in one request. Claiming the same
// attempts again is answered with the runs the runtime already holds, so a
// try whose answer was lost is simply sent again.
func (c *RuntimeClient) ClaimMany(ctx context.Context, req ClaimManyRequest) (*ClaimManyResponse, error) {
	return Send(ctx, c, OpRuntimeClaimMany, req)
}

// Release gives back a claimed run that never started.
func (c *RuntimeClient) Release(ctx context.Context, req ReleaseRequest) error {
	_, err := Send(ctx, c, OpRuntimeRelease, req)
	return err
}

// Renew extends the leases of running runs; a renewal whose answer was lost
// is sent again, well before the leases run out.
func (c *RuntimeClient) Renew(ctx context.Context, req RenewRequest) (*RenewResponse, error) {
	return Send(ctx, c, OpRuntimeRenew, req)
}

// Goodbye says the runtime is stopping on purpose (Ctrl-C, its service
// stopped): it is shown offline at once.
func (c *RuntimeClient) Goodbye(ctx context.Context) error {
	_, err := Send(ctx, c, OpRuntimeGoodbye, Empty{})
	return err
}

// Canceled waits for runs the runtime holds to be canceled
// (CanceledRequest).
func (c *RuntimeClient) Canceled(ctx context.Context, req CanceledRequest) (*CanceledResponse, error) {
	return Send(ctx, c, OpRuntimeCanceled, req)
}

// Progress reports progress on a run.
func (c *RuntimeClient) Progress(ctx context.Context, req ProgressRequest) (*ReportAck, error) {
	return Send(ctx, c, OpRuntimeProgress, req)
}

// Complete ends a run with its output.
func (c *RuntimeClient) Complete(ctx context.Context, req CompleteRequest) (*ReportAck, error) {
	return Send(ctx, c, OpRuntimeComplete, req)
}

// Fail ends a run as failed.
func (c *RuntimeClient) Fail(ctx context.Context, req FailRequest) (*ReportAck, error) {
	return Send(ctx, c, OpRuntimeFail, req)
}

// Unclaimable reports whether a claim's error means the offered run can
// never be claimed under that offer (the run moved on, another took it,
// the attempt is over, the run is gone): the claimer asks for the next.
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
