package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// wantReauth checks that a runtime stopped with exit code 3 and told the
// user to pair the same agent again (seed 001 §4.7, §7.5), without printing
// the token it lost.
func wantReauth(t *testing.T, rt *proc, token string) {
	t.Helper()
	if code := rt.waitExit(t, waitLost); code != 3 {
		t.Fatalf("exit code %d, want 3; output:\n%s", code, rt.shown(4000))
	}
	msg := rt.stderr.String()
	for _, want := range []string{"pair", "same agent", "do not create a new agent"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the runtime's last words do not say %q:\n%s", want, tail(rt.l.secrets.Mask(msg), 2000))
		}
	}
	if strings.Contains(rt.output(), token) {
		t.Errorf("the runtime printed its revoked token")
	}
}

// A runtime whose credential is revoked on the platform stops by itself with
// exit code 3 and asks to pair the same agent again; started again with the
// revoked profile, it stops the same way at once. Over both transports.
func TestRevoke_RevokedRuntimeExitsWithCode3AskingToPairTheSameAgent(t *testing.T) {
	eachTransport(t, func(t *testing.T, l *lab, transport string) {
		p := l.startPlatform(platformOptions{})
		c := l.connect(p, l.startAdapter("echo").Endpoint, "--transport", transport)

		p.forTest(t).Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + c.RuntimeID + "/revoke", Owner: true}).
			Expect(t, http.StatusOK)
		wantReauth(t, c.rt, c.Token)
		if v := p.forTest(t).RuntimeView(t, c.AgentID, c.RuntimeID); v.State != mesh.RuntimeRevoked {
			t.Errorf("runtime state %s, want revoked", v.State)
		}
		auth := c.m.waitLedger(c.AgentID, waitStart, func(e ledgerEntry) bool { return e.Event == "auth_rejected" })
		if strings.Contains(auth.Message, c.Token) {
			t.Errorf("the ledger records the token")
		}

		wantReauth(t, c.m.spawnRuntime("--transport", transport), c.Token)
	})
}

// TestRevoke_RevokedRuntimeOnNATSExitsAtOnce: the platform closes a revoked
// runtime's NATS connection at once, and the runtime then asks about its
// credential straight away instead of at its next heartbeat (a third of the
// heartbeat timeout: 20 s here), so it stops within seconds.
func TestRevoke_RevokedRuntimeOnNATSExitsAtOnce(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{heartbeatTimeout: time.Minute})
	c := l.connect(p, l.startAdapter("echo").Endpoint, "--transport", "nats")
	revoked := time.Now()
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + c.RuntimeID + "/revoke", Owner: true}).Expect(t, http.StatusOK)
	wantReauth(t, c.rt, c.Token)
	if took := time.Since(revoked); took > 5*time.Second {
		t.Fatalf("the revoked runtime stopped %s after the revocation, want within seconds", took.Round(time.Millisecond))
	}
}
