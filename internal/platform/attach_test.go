package platform_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/nats-io/nats.go"
)

// TestRevoke_DisconnectsTheRuntimesNATSConnection: a revoked runtime does not
// keep receiving its agent's events (task inputs) on a connection it opened
// before the revocation.
func TestRevoke_DisconnectsTheRuntimesNATSConnection(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("kicked")
	att := p.Attach(agent.ID)
	closed := make(chan struct{})
	nc, err := nats.Connect(p.NATSURL(), nats.Token(att.RuntimeToken), nats.CustomInboxPrefix(att.NATS.InboxPrefix),
		nats.NoReconnect(), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err != nil {
		t.Fatalf("runtime connection refused before revocation: %v", err)
	}
	defer nc.Close()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + att.RuntimeID + "/revoke", Owner: true}).Expect(t, http.StatusOK)
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the revoked runtime's NATS connection is still open")
	}
	if _, err := nats.Connect(p.NATSURL(), nats.Token(att.RuntimeToken), nats.NoReconnect()); err == nil {
		t.Fatal("a revoked token connected again")
	}
}

// TestAttach_OriginIsTheBoundAddress: with port 0 the platform origin passed
// to adapters is the address the API really listens on.
func TestAttach_OriginIsTheBoundAddress(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("origin")
	body := map[string]any{"pairing_token": p.PairingCode(agent.ID)}
	var att struct {
		Platform struct {
			Origin string `json:"origin"`
		} `json:"platform"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/attach-via-pairing", JSON: body}).Expect(t, http.StatusOK).Decode(t, &att)
	u, _ := url.Parse(p.APIBase)
	if att.Platform.Origin != u.Host || strings.HasSuffix(att.Platform.Origin, ":0") {
		t.Fatalf("origin %q, want %q", att.Platform.Origin, u.Host)
	}
}

// TestRuntimes_ListedRightAfterAttachAndRevoke: the runtimes list answers
// with the writes the credential service made before the question.
func TestRuntimes_ListedRightAfterAttachAndRevoke(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("listed")
	for i := 0; i < 20; i++ {
		att := p.Attach(agent.ID)
		if v := p.RuntimeView(t, agent.ID, att.RuntimeID); v.State != "active" {
			t.Fatalf("attempt %d: runtime listed as %q right after attach", i, v.State)
		}
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + att.RuntimeID + "/revoke", Owner: true}).Expect(t, http.StatusOK)
		if v := p.RuntimeView(t, agent.ID, att.RuntimeID); v.State != "revoked" {
			t.Fatalf("attempt %d: runtime listed as %q right after revoke", i, v.State)
		}
	}
}
