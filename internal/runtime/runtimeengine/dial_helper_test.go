package runtimeengine_test

import (
	"context"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/meshapi"
)

// dialNATS connects a runtime's NATS transport to url with att's
// credential, as a2a-runtime start does, with a short wait for work; the
// transport closes when the test ends.
func dialNATS(ctx context.Context, t *testing.T, url string, att meshtest.Attached) (runtimeengine.Transport, *meshapi.HelloResponse) {
	t.Helper()
	tr, hello, err := runtimeengine.DialNATS(ctx, runtimeengine.NATSConfig{
		URL: url, Token: att.RuntimeToken, AgentID: att.AgentID, RuntimeID: att.RuntimeID,
		InboxPrefix: att.NATS.InboxPrefix, ClaimWait: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tr, hello
}
