package credentials_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestAuthenticate_AnUnreadableRuntimeRecordIsNotARevokedCredential: a
// runtime told its credential is revoked stops for good, so a record that
// cannot be read (a node lost, its stream without a leader for a moment)
// must answer an error the runtime retries, never UNAUTHORIZED.
func TestAuthenticate_AnUnreadableRuntimeRecordIsNotARevokedCredential(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("kept")
	a := p.Attach(agent.ID)
	c := meshapi.NewClient(p.Conn().NC)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Authenticate(ctx, secret.Hash(a.RuntimeToken)); err != nil {
		t.Fatalf("authenticate a paired runtime: %v", err)
	}
	if err := p.Conn().JS.DeleteStream(ctx, "KV_"+bus.BucketRuntimes); err != nil {
		t.Fatal(err)
	}
	_, err := c.Authenticate(ctx, secret.Hash(a.RuntimeToken))
	var me *mesh.Error
	if err == nil || (errors.As(err, &me) && me.Code == mesh.CodeUnauthorized) {
		t.Fatalf("authenticate while the runtime record cannot be read: %v, want an error other than UNAUTHORIZED", err)
	}
}
