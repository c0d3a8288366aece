package taskqueue

import (
	"context"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/meshapi"
)

// handleHello tells a runtime who it is and how to work: its timings and
// its agent's instructions. It checks the runtime and changes nothing.
func (s *Service) handleHello(ctx context.Context, in *meshapi.Empty) (*meshapi.HelloResponse, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.runtimes.Check(ctx, agentID, runtimeID, false); err != nil {
		return nil, err
	}
	resp := meshapi.HelloResponse{
		AgentID:            agentID,
		RuntimeID:          runtimeID,
		LeaseMS:            s.cfg.Lease.Milliseconds(),
		HeartbeatTimeoutMS: s.cfg.HeartbeatTimeout.Milliseconds(),
	}
	if a, ok := s.currentAgent(ctx, agentID); ok {
		resp.Instructions = a.Instructions
	}
	return &resp, nil
}
