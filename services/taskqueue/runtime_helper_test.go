package taskqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// heldRuntime starts a platform on which no lease or presence ends within
// a test, with an agent named name and an online runtime of it, and
// returns the runtime's bus client and a context of 30 s for its calls.
func heldRuntime(t *testing.T, name string) (*meshtest.Platform, mesh.Agent, meshtest.Attached, *meshapi.RuntimeClient, context.Context) {
	t.Helper()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.Lease = time.Minute; c.HeartbeatTimeout = time.Minute })
	agent := p.CreateAgent(name)
	rt := p.OnlineRuntime(t, agent.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return p, agent, rt, p.RuntimeClient(t, rt), ctx
}
