package a2aserver

import (
	"context"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
)

// What the partner and envelope endpoints (both in the gateway) use of this
// one: the agents it knows and their presence, and who created a task, so a
// task created through any endpoint is seen by the same caller through
// every other (admission decides who the caller is).

// Agent returns an agent account.
func (s *Server) Agent(ctx context.Context, id string) (*mesh.Agent, error) {
	return s.agent(ctx, id)
}

// Agents lists every agent account this gateway knows.
func (s *Server) Agents() []*mesh.Agent {
	var out []*mesh.Agent
	s.agents.Range(func(_ string, a *mesh.Agent) bool {
		out = append(out, a)
		return true
	})
	return out
}

// Online reports whether an agent has an active runtime whose heartbeats
// arrive.
func (s *Server) Online(ctx context.Context, agentID string) bool {
	return s.handler.online(ctx, agentID)
}

// Adopt records the caller who created a task through another endpoint,
// so this one shows the task to the same caller (and to nobody else but the
// owner). A task recorded already keeps its creator.
func (s *Server) Adopt(ctx context.Context, run *mesh.TaskRun, c *admission.Caller, version string) error {
	if version == "" {
		version = a2atask.Version10
	}
	return s.records.create(ctx, &record{
		TaskID: run.ID, AgentID: run.TargetAgentID, ContextID: run.ConversationID, Caller: c.ID,
		Version: version, History: []*a2a.Message{a2atask.InputMessage(run)}, CreatedAt: time.Now().UTC(),
	})
}

// Creator returns the ID of the caller recorded with a task, or "" when no
// endpoint recorded one (only the owner sees such a task).
func (s *Server) Creator(ctx context.Context, run *mesh.TaskRun) (string, error) {
	rec, _, err := s.records.get(ctx, run.TargetAgentID, run.ID)
	if err != nil || rec == nil {
		return "", err
	}
	return rec.Caller, nil
}
