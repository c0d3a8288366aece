package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/meshapi"
)

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

// TestA2AKey_AdmittedOnceIsNotCheckedAgainWhileItsRecordIsUnchanged: every
// A2A request carries its API key; the gateway asks the credential service
// about a key once, and not again while the key's record does not change.
func TestA2AKey_AdmittedOnceIsNotCheckedAgainWhileItsRecordIsUnchanged(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("keyed")
	key := newA2AKey(t, p, agent.ID)
	asked := countChecks(t, p, meshapi.OpA2AKeyAuthenticate)
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
	refusedWithin(t, 2*time.Second, func() int { return listWithKey(t, p, agent.ID, elsewhere.APIKey) })
	if status := listWithKey(t, p, agent.ID, elsewhere.APIKey); status != http.StatusUnauthorized {
		t.Fatalf("the revoked key answered %d afterwards, want 401", status)
	}
}
