package gateway_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
)

// countChecks counts the requests the gateway makes of the credential
// service's operation op (a credential check).
func countChecks(t *testing.T, p *meshtest.Platform, op string) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	sub, err := p.Conn().NC.Subscribe(bus.ServiceSubject(bus.ServiceCredentials, op), func(*nats.Msg) { n.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := p.Conn().NC.Flush(); err != nil {
		t.Fatal(err)
	}
	return &n
}

// heartbeatStatus sends one heartbeat with token and returns the answer's status.
func heartbeatStatus(t *testing.T, p *meshtest.Platform, token string) int {
	t.Helper()
	return p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/heartbeat", RuntimeToken: token, JSON: map[string]any{}}).Status
}

// refusedNow sends one heartbeat with token and fails the test unless it
// is refused as unauthorized.
func refusedNow(t *testing.T, p *meshtest.Platform, token string) {
	t.Helper()
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/heartbeat", RuntimeToken: token, JSON: map[string]any{}}).
		ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
}

// refusedWithin sends requests with a credential until one is refused with
// 401, and fails the test if an answer is neither 200 nor 401 or if none is
// refused within d.
func refusedWithin(t *testing.T, d time.Duration, send func() int) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		status := send()
		if status == http.StatusUnauthorized {
			return
		}
		if status != http.StatusOK {
			t.Fatalf("answered %d, want 200 until the credential is refused, then 401", status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ended credential was still admitted %s later", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRuntimeCredential_AdmittedOnceIsNotCheckedAgainWhileItsRuntimeIsUnchanged:
// a runtime on the HTTP transport makes a request per pull, report and
// heartbeat; the gateway asks the credential service about its credential
// once, and not again while the runtime's record does not change.
func TestRuntimeCredential_AdmittedOnceIsNotCheckedAgainWhileItsRuntimeIsUnchanged(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	rt := p.Attach(p.CreateAgent("remembered").ID)
	asked := countChecks(t, p, meshapi.OpPairingAuthenticate)
	for range 5 {
		p.Heartbeat(t, rt.RuntimeToken)
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("the credential service was asked %d times about one credential, want 1", n)
	}
}

// TestRuntimeCredential_RevokedOnTheBusIsRefusedPromptly: a credential the
// gateway admitted before is refused once its runtime is revoked, even when
// the revocation did not pass through this gateway (another gateway, the
// admin command on the bus).
func TestRuntimeCredential_RevokedOnTheBusIsRefusedPromptly(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	rt := p.Attach(p.CreateAgent("revoked-elsewhere").ID)
	p.Heartbeat(t, rt.RuntimeToken)
	p.Heartbeat(t, rt.RuntimeToken)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := meshapi.NewClient(p.Conn().NC).RevokeRuntime(ctx, meshapi.RevokeRuntimeRequest{RuntimeID: rt.RuntimeID}); err != nil {
		t.Fatal(err)
	}
	refusedWithin(t, 2*time.Second, func() int { return heartbeatStatus(t, p, rt.RuntimeToken) })
	// And it stays refused.
	refusedNow(t, p, rt.RuntimeToken)
}

// TestRuntimeCredential_RevokedThroughTheGatewayIsRefusedAtOnce: the request
// right after a revocation answered by this gateway is refused, with no
// wait for the view of the runtimes to hear of it.
func TestRuntimeCredential_RevokedThroughTheGatewayIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("revoked-here")
	byOwner := p.Attach(agent.ID)
	p.Heartbeat(t, byOwner.RuntimeToken)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + byOwner.RuntimeID + "/revoke", Owner: true}).Expect(t, http.StatusOK)
	refusedNow(t, p, byOwner.RuntimeToken)

	self := p.Attach(agent.ID)
	p.Heartbeat(t, self.RuntimeToken)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/revoke", RuntimeToken: self.RuntimeToken}).Expect(t, http.StatusOK)
	refusedNow(t, p, self.RuntimeToken)
}

// TestRuntimeCredential_ReplacedByANewPairingIsRefusedPromptly: pairing the
// agent again replaces its runtime; the old credential, admitted before,
// is refused and the new one admitted.
func TestRuntimeCredential_ReplacedByANewPairingIsRefusedPromptly(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("replaced")
	old := p.Attach(agent.ID)
	p.Heartbeat(t, old.RuntimeToken)
	p.Heartbeat(t, old.RuntimeToken)
	repl := p.Attach(agent.ID)
	refusedWithin(t, 2*time.Second, func() int { return heartbeatStatus(t, p, old.RuntimeToken) })
	p.Heartbeat(t, repl.RuntimeToken)
}
