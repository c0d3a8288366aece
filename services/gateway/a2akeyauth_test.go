package gateway_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/meshtest"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
)

// countKeyChecks counts the A2A API key checks the gateway asks the
// credential service for.
func countKeyChecks(t *testing.T, p *meshtest.Platform) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	sub, err := p.Conn().NC.Subscribe(bus.ServiceSubject(bus.ServiceCredentials, meshapi.OpA2AKeyAuthenticate), func(*nats.Msg) { n.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := p.Conn().NC.Flush(); err != nil {
		t.Fatal(err)
	}
	return &n
}

// listWithKey lists the agent's A2A tasks with an API key and returns the
// answer's status.
func listWithKey(t *testing.T, p *meshtest.Platform, agentID, key string) int {
	t.Helper()
	return p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/a2a/" + agentID + "/tasks",
		Header: http.Header{"X-Api-Key": {key}, "A2a-Version": {"1.0"}}}).Status
}

func newA2AKey(t *testing.T, p *meshtest.Platform, agentID string) meshapi.CreateA2AKeyResponse {
	t.Helper()
	var key meshapi.CreateA2AKeyResponse
	p.Do(http.MethodPost, "/a2a/"+agentID+"/api-keys", nil, &key)
	return key
}

// keyRefusedWithin polls with key until a request is refused with 401, and
// fails the test if none is within d.
func keyRefusedWithin(t *testing.T, p *meshtest.Platform, agentID, key string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		switch status := listWithKey(t, p, agentID, key); status {
		case http.StatusUnauthorized:
			return
		case http.StatusOK:
		default:
			t.Fatalf("A2A list answered %d, want 200 until the key is refused, then 401", status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the revoked key was still admitted %s later", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestA2AKey_AdmittedOnceIsNotCheckedAgainWhileItsRecordIsUnchanged: every
// A2A request carries its API key; the gateway asks the credential service
// about a key once, and not again while the key's record does not change.
func TestA2AKey_AdmittedOnceIsNotCheckedAgainWhileItsRecordIsUnchanged(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("keyed")
	key := newA2AKey(t, p, agent.ID)
	asked := countKeyChecks(t, p)
	for range 5 {
		if status := listWithKey(t, p, agent.ID, key.APIKey); status != http.StatusOK {
			t.Fatalf("A2A list with the key answered %d", status)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("the credential service was asked %d times about one key, want 1", n)
	}
	// Another agent's endpoint refuses the remembered key all the same.
	other := p.CreateAgent("other")
	if status := listWithKey(t, p, other.ID, key.APIKey); status != http.StatusForbidden {
		t.Fatalf("another agent's endpoint answered %d to the key, want 403", status)
	}
}

// TestA2AKey_RevokedIsRefused: a key the gateway admitted before is refused
// at once when revoked through this gateway, and promptly when revoked on
// the bus (another gateway).
func TestA2AKey_RevokedIsRefused(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("revoking")

	here := newA2AKey(t, p, agent.ID)
	listWithKey(t, p, agent.ID, here.APIKey)
	listWithKey(t, p, agent.ID, here.APIKey)
	p.Send(t, meshtest.Request{Method: http.MethodDelete, Path: "/a2a/" + agent.ID + "/api-keys/" + here.KeyID, Owner: true}).Expect(t, http.StatusNoContent)
	if status := listWithKey(t, p, agent.ID, here.APIKey); status != http.StatusUnauthorized {
		t.Fatalf("the request right after the revocation answered %d, want 401", status)
	}

	elsewhere := newA2AKey(t, p, agent.ID)
	listWithKey(t, p, agent.ID, elsewhere.APIKey)
	listWithKey(t, p, agent.ID, elsewhere.APIKey)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := meshapi.NewClient(p.Conn().NC).RevokeA2AKey(ctx, meshapi.RevokeA2AKeyRequest{AgentID: agent.ID, KeyID: elsewhere.KeyID}); err != nil {
		t.Fatal(err)
	}
	keyRefusedWithin(t, p, agent.ID, elsewhere.APIKey, 2*time.Second)
	if status := listWithKey(t, p, agent.ID, elsewhere.APIKey); status != http.StatusUnauthorized {
		t.Fatalf("the revoked key answered %d afterwards, want 401", status)
	}
}
