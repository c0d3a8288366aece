package delegation

import (
	"context"
	"errors"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// maxTraceHops bounds the walk up and down a delegation tree, far above any
// chain the depth limit lets grow, so a corrupt link cannot loop forever.
const maxTraceHops = 64

func (s *Service) handleTrace(ctx context.Context, in *meshapi.TraceRequest) (*meshapi.TraceNode, error) {
	run, err := s.client.GetTaskRun(ctx, in.TaskRunID)
	if err != nil {
		return nil, err
	}
	// Up to the run that started the delegation.
	for hops := 0; run.ParentTaskRunID != "" && hops < maxTraceHops; hops++ {
		parent, err := s.client.GetTaskRun(ctx, run.ParentTaskRunID)
		if errors.Is(err, mesh.ErrNotFound) {
			break
		}
		if err != nil {
			return nil, err
		}
		run = parent
	}
	names := map[string]string{}
	return s.node(ctx, run, names, 0)
}

// node is the trace of a run and of everything it delegated.
func (s *Service) node(ctx context.Context, run *mesh.TaskRun, names map[string]string, depth int) (*meshapi.TraceNode, error) {
	n := &meshapi.TraceNode{
		TaskRunID: run.ID, AgentID: run.TargetAgentID, AgentName: s.agentName(ctx, run.TargetAgentID, names),
		Status: string(run.Status), CreatedAt: &run.CreatedAt, ClaimedAt: run.ClaimedAt, EndedAt: run.EndedAt,
		IdempotencyKey: run.IdempotencyKey, Error: run.Error, Usage: run.Usage, UsageTotal: run.UsageTotal, Children: []meshapi.TraceNode{},
	}
	if run.ClaimedAt != nil {
		end := time.Now()
		if run.EndedAt != nil {
			end = *run.EndedAt
		}
		ms := end.Sub(*run.ClaimedAt).Milliseconds()
		n.DurationMS = &ms
	}
	d := run.DelegatedTo
	switch {
	case d == nil || depth >= maxTraceHops:
	case d.TaskRunID != "":
		if err := s.appendChild(ctx, n, d.TaskRunID, names, depth); err != nil {
			return nil, err
		}
	case d.PartnerID != "":
		state := d.RemoteState
		if state == "" {
			state = "submitted"
		}
		n.Children = append(n.Children, meshapi.TraceNode{
			PartnerID: d.PartnerID, RemoteTaskID: d.RemoteTaskID, Status: state, CreatedAt: d.DelegatedAt, Children: []meshapi.TraceNode{},
		})
	}
	if depth >= maxTraceHops {
		return n, nil
	}
	children, err := s.store.childrenOfRun(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	for _, c := range children {
		if err := s.appendChild(ctx, n, c.ChildID, names, depth); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// appendChild adds the trace of the run childID under n; a run that is
// gone is left out.
func (s *Service) appendChild(ctx context.Context, n *meshapi.TraceNode, childID string, names map[string]string, depth int) error {
	child, err := s.client.GetTaskRun(ctx, childID)
	if errors.Is(err, mesh.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	cn, err := s.node(ctx, child, names, depth+1)
	if err != nil {
		return err
	}
	n.Children = append(n.Children, *cn)
	return nil
}

func (s *Service) agentName(ctx context.Context, id string, names map[string]string) string {
	if name, ok := names[id]; ok {
		return name
	}
	name := ""
	if a, err := s.agent(ctx, id); err == nil {
		name = a.Name
	}
	names[id] = name
	return name
}
