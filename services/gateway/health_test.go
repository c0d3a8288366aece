package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

type readiness struct {
	Ready  bool              `json:"ready"`
	Checks map[string]string `json:"checks"`
}

// TestHealth_LiveAndReadyWithoutCredentials: probes need no credential, and
// readiness reports each check.
func TestHealth_LiveAndReadyWithoutCredentials(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	var live struct {
		OK bool `json:"ok"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/healthz"}).Expect(t, http.StatusOK).Decode(t, &live)
	if !live.OK {
		t.Fatal("/healthz did not say ok")
	}
	var ready readiness
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/readyz"}).Expect(t, http.StatusOK).Decode(t, &ready)
	if !ready.Ready || ready.Checks["nats"] != "ok" || ready.Checks["jetstream"] != "ok" {
		t.Fatalf("/readyz: %+v, want ready with nats and jetstream ok", ready)
	}
}

// TestHealth_ReadyzFailsWhenAStreamIsMissing shows readiness really checks
// the bus: with the event stream gone it answers 503 and says which check failed.
func TestHealth_ReadyzFailsWhenAStreamIsMissing(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Conn().JS.DeleteStream(ctx, bus.EventStream); err != nil {
		t.Fatal(err)
	}
	var ready readiness
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/readyz"}).Expect(t, http.StatusServiceUnavailable).Decode(t, &ready)
	if ready.Ready || ready.Checks["nats"] != "ok" || !strings.Contains(ready.Checks["jetstream"], bus.EventStream) {
		t.Fatalf("/readyz without the event stream: %+v", ready)
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/healthz"}).Expect(t, http.StatusOK)
}

// TestHealth_ReadyzNamesEveryMissingBucket: readiness covers every stream,
// bucket and object store the platform provisions, not a sample of them.
func TestHealth_ReadyzNamesEveryMissingBucket(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{"KV_" + bus.BucketPresence, "KV_" + bus.BucketA2AEndpoints} {
		if err := p.Conn().JS.DeleteStream(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	var ready readiness
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/readyz"}).Expect(t, http.StatusServiceUnavailable).Decode(t, &ready)
	for _, name := range []string{"KV_" + bus.BucketPresence, "KV_" + bus.BucketA2AEndpoints} {
		if ready.Ready || !strings.Contains(ready.Checks["jetstream"], name) {
			t.Fatalf("/readyz without %s: %+v", name, ready)
		}
	}
}
