package taskqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/meshtest"
)

// TestAgent_HasItsQueueConsumerBeforeItsFirstRun: the task queue creates a
// new agent's queue consumer when the agent is created, so queueing its
// first run needs no consumer created then (which JetStream cannot do while
// a supercluster's meta group has no quorum).
func TestAgent_HasItsQueueConsumerBeforeItsFirstRun(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("ready early")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, err := p.Conn().JS.Consumer(ctx, bus.QueueStream, bus.QueueConsumer(agent.ID))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("agent %s has no queue consumer 10 s after its creation and before any run: %v", agent.ID, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
