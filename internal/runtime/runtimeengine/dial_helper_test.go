package runtimeengine_test

import (
	"context"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/restclient"

	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/meshapi"
)

// dialNATS connects a runtime's NATS transport to url with att's
// credential, as a2a-runtime start does, with a short wait for work; the
// transport closes when the test ends (closing it before does no harm).
func dialNATS(ctx context.Context, t *testing.T, url string, att meshtest.Attached) (runtimeengine.Transport, *meshapi.HelloResponse) {
	t.Helper()
	tr, hello, err := runtimeengine.DialNATS(ctx, runtimeengine.NATSConfig{
		URL: url, Token: att.RuntimeToken, AgentID: att.AgentID, RuntimeID: att.RuntimeID,
		InboxPrefix: att.NATS.InboxPrefix, ClaimWait: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr, hello
}

// longLeases has a test platform keep leases and runtimes for a minute, so
// none ends within a test: what the test sees of its runs is what the
// transport did.
func longLeases(c *platform.Config) { c.Lease = time.Minute; c.HeartbeatTimeout = time.Minute }

// dialHTTP is a runtime's HTTP transport to the REST API at base with
// att's credential, with a short pull wait; it closes when the test ends
// (closing it before does no harm).
func dialHTTP(t *testing.T, base string, att meshtest.Attached) runtimeengine.Transport {
	t.Helper()
	api, err := restclient.New(base, restclient.WithRuntimeToken(att.RuntimeToken))
	if err != nil {
		t.Fatal(err)
	}
	tr := runtimeengine.NewHTTP(runtimeengine.HTTPConfig{API: api, AgentID: att.AgentID, PullWait: 2 * time.Second})
	t.Cleanup(tr.Close)
	return tr
}

// dialTransport is dialNATS or dialHTTP to p, as transport names.
func dialTransport(ctx context.Context, t *testing.T, p *meshtest.Platform, att meshtest.Attached, transport string) runtimeengine.Transport {
	t.Helper()
	if transport == runtimeengine.ModeHTTP {
		return dialHTTP(t, p.APIBase, att)
	}
	tr, _ := dialNATS(ctx, t, p.NATSURL(), att)
	return tr
}
