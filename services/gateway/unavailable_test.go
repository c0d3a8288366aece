package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestErrors_StoreThatCannotBeReachedIs503WithRetryAfter: when the runs
// bucket does not answer (its stream has no leader, here: it is gone), a
// creation is answered 503 UNAVAILABLE with Retry-After, telling the client
// to send the same request again, instead of 500.
func TestErrors_StoreThatCannotBeReachedIs503WithRetryAfter(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("unreachable store")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Conn().JS.DeleteStream(ctx, "KV_"+bus.BucketRuns); err != nil {
		t.Fatal(err)
	}
	res := p.CreateTaskWith(t, map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "x"}, "idempotency_key": "k1"})
	res.ExpectError(t, http.StatusServiceUnavailable, mesh.CodeUnavailable)
	if res.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
}
