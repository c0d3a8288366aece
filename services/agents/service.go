// Package agents is the agent-account service: create, read, list and edit the
// long-lived agent identities that runtimes attach to (seed 001 §2.1).
package agents

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Limits on agent fields.
const (
	maxNameLen         = 200
	maxDescriptionLen  = 4000
	maxInstructionsLen = 64 << 10
	maxSkills          = 100
)

// Config configures the service.
type Config struct {
	Conn   *bus.Conn
	Logger zerolog.Logger
	// Metrics receives the service's metrics; nil records none.
	Metrics prometheus.Registerer
	// Region is the region this service runs in: the home region of the
	// agents it creates without one. Default bus.DefaultRegion.
	Region string
}

// Service serves agent accounts on the bus.
type Service struct {
	cfg    Config
	agents *bus.Records[mesh.Agent]
	mirror *bus.Mirror[mesh.Agent, *mesh.Agent]
	events *bus.Publisher
	svc    *bus.Service
}

// New returns a service; Start runs it.
func New(cfg Config) *Service {
	if cfg.Region == "" {
		cfg.Region = bus.DefaultRegion
	}
	return &Service{cfg: cfg}
}

// Start binds to the bus and starts answering.
func (s *Service) Start(ctx context.Context) error {
	js := s.cfg.Conn.JS
	var err error
	if s.agents, err = bus.OpenRecords[mesh.Agent](ctx, js, bus.BucketAgents); err != nil {
		return err
	}
	s.mirror, err = bus.StartMirror(ctx, js, bus.BucketAgents, bus.MirrorConfig[mesh.Agent, *mesh.Agent]{
		Project: func(_ string, a *mesh.Agent, rev uint64) (*mesh.Agent, bool) { a.Revision = rev; return a, true },
		Logger:  s.cfg.Logger,
	})
	if err != nil {
		return err
	}
	if err := s.mirror.WaitReady(ctx); err != nil {
		return fmt.Errorf("agents: load: %w", err)
	}
	if err := s.homeUnhomed(ctx); err != nil {
		return err
	}
	s.events = bus.NewPublisher(js, bus.ServiceAgents).OnPublished(metrics.EventsPublished(s.cfg.Metrics, bus.ServiceAgents))
	s.svc, err = bus.Serve(s.cfg.Conn.NC, bus.ServiceSpec{
		Name: bus.ServiceAgents, Description: "agent accounts", Logger: s.cfg.Logger,
		Endpoints: []bus.Endpoint{
			meshapi.OpAgentsCreate.Handle(s.create),
			meshapi.OpAgentsGet.Handle(s.get),
			meshapi.OpAgentsList.Handle(s.list),
			meshapi.OpAgentsUpdate.Handle(s.update),
			meshapi.OpAgentsDelete.Handle(s.delete),
		},
	})
	return err
}

// Stop stops answering and waits up to grace for requests in flight.
func (s *Service) Stop(grace time.Duration) {
	if s.svc != nil {
		_ = s.svc.Stop(grace)
	}
	if s.mirror != nil {
		_ = s.mirror.Stop()
	}
}

func (s *Service) create(ctx context.Context, in *meshapi.CreateAgentRequest) (*mesh.Agent, error) {
	home := in.HomeRegion
	if home == "" {
		home = s.cfg.Region
	}
	if err := bus.ValidRegion(home); err != nil {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "home_region: %v", err)
	}
	now := time.Now().UTC()
	a := &mesh.Agent{
		HomeRegion:     home,
		ID:             mesh.NewID(),
		Name:           strings.TrimSpace(in.Name),
		Description:    in.Description,
		Instructions:   in.Instructions,
		Skills:         in.Skills,
		Public:         in.Public,
		Delegation:     normalPolicy(in.Delegation),
		Budget:         normalBudget(in.Budget),
		ApprovalPolicy: normalApprovalPolicy(in.ApprovalPolicy),
		CreatedAt:      now,
		UpdatedAt:      now,
	}
	if err := validate(a); err != nil {
		return nil, err
	}
	// Owned by its home region, where it is changed while any other
	// region, the origin included, is down.
	rev, err := s.agents.CreateIn(ctx, home, a.ID, a)
	if err != nil {
		return nil, fmt.Errorf("create agent: %w", err)
	}
	a.Revision = rev
	s.mirror.Apply(a.ID, a, rev)
	s.publish(ctx, mesh.EventAgentCreated, a)
	return a, nil
}

func (s *Service) get(ctx context.Context, in *meshapi.GetAgentRequest) (*mesh.Agent, error) {
	return s.lookup(ctx, in.AgentID)
}

// lookup answers from the mirror and falls back to the bucket, so an agent
// created through another instance a moment ago is still found.
func (s *Service) lookup(ctx context.Context, id string) (*mesh.Agent, error) {
	if !mesh.ValidID(id) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "agent %q not found", id)
	}
	if a, ok := s.mirror.Get(id); ok {
		return a, nil
	}
	a, rev, err := s.agents.Get(ctx, id)
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "agent %s not found", id)
	}
	if err != nil {
		return nil, err
	}
	a.Revision = rev
	return a, nil
}

func (s *Service) list(ctx context.Context, in *meshapi.ListAgentsRequest) (*meshapi.AgentList, error) {
	// Agents created through another instance a moment ago are listed too.
	if err := s.mirror.Sync(ctx); err != nil {
		return nil, err
	}
	out := meshapi.AgentList{Agents: []mesh.Agent{}}
	s.mirror.Range(func(_ string, a *mesh.Agent) bool {
		out.Agents = append(out.Agents, *a)
		return true
	})
	sort.Slice(out.Agents, func(i, j int) bool { return out.Agents[i].ID < out.Agents[j].ID })
	return &out, nil
}

func (s *Service) update(ctx context.Context, in *meshapi.UpdateAgentRequest) (*mesh.Agent, error) {
	cur, err := s.lookup(ctx, in.AgentID)
	if err != nil {
		return nil, err
	}
	if in.HomeRegion != nil && *in.HomeRegion != cur.HomeRegion {
		if err := bus.ValidRegion(*in.HomeRegion); err != nil {
			return nil, mesh.Errorf(mesh.CodeInvalidRequest, "home_region: %v", err)
		}
		if err := s.movable(ctx, cur.ID); err != nil {
			return nil, err
		}
	}
	a, rev, err := s.agents.Modify(ctx, in.AgentID, func(a *mesh.Agent) error {
		if in.Name != nil {
			a.Name = strings.TrimSpace(*in.Name)
		}
		if in.Description != nil {
			a.Description = *in.Description
		}
		if in.Instructions != nil {
			a.Instructions = *in.Instructions
		}
		if in.Skills != nil {
			a.Skills = *in.Skills
		}
		if in.Public != nil {
			a.Public = *in.Public
		}
		if in.Delegation != nil {
			a.Delegation = normalPolicy(in.Delegation)
		}
		if in.Budget != nil {
			a.Budget = normalBudget(in.Budget)
		}
		if in.ApprovalPolicy != nil {
			a.ApprovalPolicy = normalApprovalPolicy(in.ApprovalPolicy)
		}
		if in.HomeRegion != nil {
			a.HomeRegion = *in.HomeRegion
		}
		a.UpdatedAt = time.Now().UTC()
		return validate(a)
	})
	if err != nil {
		return nil, err
	}
	a.Revision = rev
	s.mirror.Apply(a.ID, a, rev)
	s.publish(ctx, mesh.EventAgentUpdated, a)
	return a, nil
}

// openStatuses are the statuses of a run that has not ended.
var openStatuses = []mesh.Status{mesh.StatusPending, mesh.StatusRunning, mesh.StatusInputRequired, mesh.StatusApprovalRequired}

// movable refuses to move an agent to another region while it has a run
// that has not ended: that run's record, queue message and events stay in
// the region it was created in, where the agent's runtime, now served by
// its new region, would no longer look for them. Once every run has ended
// (or been canceled), the agent moves and its new runs live in the new
// region; its finished runs stay where they ran.
func (s *Service) movable(ctx context.Context, agentID string) error {
	client := meshapi.NewClient(s.cfg.Conn.NC)
	for _, st := range openStatuses {
		page, err := client.ListTaskRuns(ctx, meshapi.ListTaskRunsRequest{AgentID: agentID, Status: st, Limit: 1})
		if err != nil {
			return fmt.Errorf("list the %s runs of agent %s: %w", st, agentID, err)
		}
		if len(page.TaskRuns) > 0 {
			return mesh.Errorf(mesh.CodeConflict, "agent %s has %s task runs; its home region changes only when none of its runs is pending, running or waiting for input (cancel them or let them end first)", agentID, st)
		}
	}
	return nil
}

// homeUnhomed gives the agents stored before agents had a home region this
// service's region: the data of their runs lived where the platform ran,
// and a deployment of one region has only that one.
func (s *Service) homeUnhomed(ctx context.Context) error {
	var ids []string
	s.mirror.Range(func(id string, a *mesh.Agent) bool {
		if a.HomeRegion == "" {
			ids = append(ids, id)
		}
		return true
	})
	for _, id := range ids {
		a, rev, err := s.agents.Modify(ctx, id, func(a *mesh.Agent) error {
			if a.HomeRegion == "" {
				a.HomeRegion = s.cfg.Region
			}
			return nil
		})
		if errors.Is(err, mesh.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("agents: give agent %s a home region: %w", id, err)
		}
		a.Revision = rev
		s.mirror.Apply(id, a, rev)
	}
	return nil
}

// delete removes an agent account. Its runtimes are revoked first, so none
// claims a run meanwhile; its open runs are listed while it still exists;
// then the account goes, so no new run can target it; then its open runs
// (those listed, and any created before every view saw the delete) are
// canceled. Its finished runs, artifacts and events stay (they are
// history). The other services are asked over the bus, as any client
// would.
func (s *Service) delete(ctx context.Context, in *meshapi.DeleteAgentRequest) (*meshapi.DeleteAgentResponse, error) {
	a, err := s.lookup(ctx, in.AgentID)
	if err != nil {
		return nil, err
	}
	client := meshapi.NewClient(s.cfg.Conn.NC)
	out := meshapi.DeleteAgentResponse{AgentID: a.ID}
	if out.RevokedRuntimes, err = revokeRuntimes(ctx, client, a.ID); err != nil {
		return nil, err
	}
	// Listed before the account goes: from then on the task queue's reaper
	// may cancel them too (a run whose agent is gone), and a run it
	// canceled first is no longer listed as open.
	open, err := openRuns(ctx, client, a.ID)
	if err != nil {
		return nil, err
	}
	if err := s.agents.Delete(ctx, a.ID, 0); err != nil && !errors.Is(err, mesh.ErrNotFound) {
		return nil, fmt.Errorf("delete agent %s: %w", a.ID, err)
	}
	if err := s.mirror.Sync(ctx); err != nil {
		return nil, err
	}
	late, err := openRuns(ctx, client, a.ID)
	if err != nil {
		return nil, err
	}
	if out.CanceledTaskRuns, err = cancelForDelete(ctx, client, append(open, late...)); err != nil {
		return nil, err
	}
	s.cfg.Logger.Info().Ctx(ctx).Str("agent_id", a.ID).Int("revoked_runtimes", out.RevokedRuntimes).Int("canceled_task_runs", out.CanceledTaskRuns).Msg("agent deleted")
	return &out, nil
}

// revokeRuntimes revokes every runtime of an agent not revoked yet.
func revokeRuntimes(ctx context.Context, client *meshapi.Client, agentID string) (int, error) {
	list, err := client.ListRuntimes(ctx, agentID)
	if err != nil {
		return 0, fmt.Errorf("list the runtimes of agent %s: %w", agentID, err)
	}
	n := 0
	for _, rt := range list.Runtimes {
		if rt.State == mesh.RuntimeRevoked {
			continue
		}
		if _, err := client.RevokeRuntime(ctx, meshapi.RevokeRuntimeRequest{RuntimeID: rt.RuntimeID}); err != nil {
			if errors.Is(err, mesh.ErrNotFound) {
				continue
			}
			return n, fmt.Errorf("revoke runtime %s: %w", rt.RuntimeID, err)
		}
		n++
	}
	return n, nil
}

// openRuns lists the runs of an agent that have not ended.
func openRuns(ctx context.Context, client *meshapi.Client, agentID string) ([]string, error) {
	var ids []string
	for _, st := range openStatuses {
		cursor := ""
		for {
			page, err := client.ListTaskRuns(ctx, meshapi.ListTaskRunsRequest{AgentID: agentID, Status: st, Limit: 100, Cursor: cursor})
			if err != nil {
				return nil, fmt.Errorf("list the %s runs of agent %s: %w", st, agentID, err)
			}
			for _, r := range page.TaskRuns {
				ids = append(ids, r.ID)
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
	}
	return ids, nil
}

// cancelForDelete cancels the runs ids of an agent being deleted, with
// mesh.AgentDeletedMessage, and counts those canceled for the delete: by
// it, or by the task queue's reaper, which cancels the runs of an agent
// that is gone the same way. A run that ended otherwise meanwhile is left
// as it ended.
func cancelForDelete(ctx context.Context, client *meshapi.Client, ids []string) (int, error) {
	n := 0
	for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
		run, err := client.CancelTaskRun(ctx, meshapi.CancelTaskRunRequest{TaskRunID: id, Reason: mesh.AgentDeletedMessage})
		switch {
		case err == nil:
		case errors.Is(err, mesh.ErrInvalidTransition), errors.Is(err, mesh.ErrConflict):
			// It ended meanwhile.
			if run, err = client.GetTaskRun(ctx, id); err != nil {
				return n, fmt.Errorf("read task run %s: %w", id, err)
			}
		case errors.Is(err, mesh.ErrNotFound):
			continue
		default:
			return n, fmt.Errorf("cancel task run %s: %w", id, err)
		}
		if run.Status == mesh.StatusCanceled && run.Error != nil && run.Error.Message == mesh.AgentDeletedMessage {
			n++
		}
	}
	return n, nil
}

func (s *Service) publish(ctx context.Context, typ string, a *mesh.Agent) {
	err := s.events.Publish(ctx, bus.Event{
		Type: typ, Kind: mesh.KindAgent, AgentID: a.ID, Subject: a.ID,
		ID: fmt.Sprintf("%s.%d", a.ID, a.Revision), Sequence: a.Revision, Data: a,
		// Stored in the agent's home region, whose stream the readers of
		// its events read, whichever region's service changed it.
		Region: a.HomeRegion,
	})
	if err != nil {
		s.cfg.Logger.Error().Ctx(ctx).Err(err).Str("agent_id", a.ID).Msg("agent event not published")
	}
}

func validate(a *mesh.Agent) error {
	switch {
	case a.Name == "":
		return mesh.Errorf(mesh.CodeInvalidRequest, "name is required")
	case len(a.Name) > maxNameLen:
		return mesh.Errorf(mesh.CodeInvalidRequest, "name is longer than %d characters", maxNameLen)
	case len(a.Description) > maxDescriptionLen:
		return mesh.Errorf(mesh.CodeInvalidRequest, "description is longer than %d characters", maxDescriptionLen)
	case len(a.Instructions) > maxInstructionsLen:
		return mesh.Errorf(mesh.CodeInvalidRequest, "instructions are longer than %d bytes", maxInstructionsLen)
	case len(a.Skills) > maxSkills:
		return mesh.Errorf(mesh.CodeInvalidRequest, "more than %d skills", maxSkills)
	}
	if err := validatePolicy(a); err != nil {
		return err
	}
	if err := a.Budget.Check(); err != nil {
		return err
	}
	if err := a.ApprovalPolicy.Check(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, sk := range a.Skills {
		if strings.TrimSpace(sk.ID) == "" || strings.TrimSpace(sk.Name) == "" {
			return mesh.Errorf(mesh.CodeInvalidRequest, "skills[%d] needs an id and a name", i)
		}
		if seen[sk.ID] {
			return mesh.Errorf(mesh.CodeInvalidRequest, "skill id %q appears twice", sk.ID)
		}
		seen[sk.ID] = true
	}
	return nil
}

// maxDelegates bounds an agent's delegation allow-list.
const maxDelegates = 100

// normalPolicy keeps a policy that allows someone; one that allows no one
// is no policy.
// normalBudget keeps the limits that limit something: an empty budget
// is none.
func normalBudget(b *mesh.Budget) *mesh.Budget {
	if b == nil {
		return nil
	}
	out := &mesh.Budget{}
	if l := b.PerRun; l != nil && (l.Tokens != 0 || l.CostUSD != 0) {
		out.PerRun = &mesh.Limit{Tokens: l.Tokens, CostUSD: l.CostUSD}
	}
	if l := b.PerDay; l != nil && (l.Tokens != 0 || l.CostUSD != 0) {
		out.PerDay = &mesh.Limit{Tokens: l.Tokens, CostUSD: l.CostUSD}
	}
	if out.PerRun == nil && out.PerDay == nil {
		return nil
	}
	return out
}

func normalPolicy(p *mesh.DelegationPolicy) *mesh.DelegationPolicy {
	if p == nil || (!p.Public && len(p.Agents) == 0) {
		return nil
	}
	return &mesh.DelegationPolicy{Agents: p.Agents, Public: p.Public}
}

// validatePolicy checks the allow-list's shape. The agents it names need
// not exist yet (nor still): the platform checks the target at each
// delegation.
func validatePolicy(a *mesh.Agent) error {
	p := a.Delegation
	if p == nil {
		return nil
	}
	if len(p.Agents) > maxDelegates {
		return mesh.Errorf(mesh.CodeInvalidRequest, "delegation.agents names more than %d agents", maxDelegates)
	}
	seen := map[string]bool{}
	for i, id := range p.Agents {
		switch {
		case !mesh.ValidID(id):
			return mesh.Errorf(mesh.CodeInvalidRequest, "delegation.agents[%d] is not an agent id", i)
		case id == a.ID:
			return mesh.Errorf(mesh.CodeInvalidRequest, "delegation.agents[%d] is the agent itself", i)
		case seen[id]:
			return mesh.Errorf(mesh.CodeInvalidRequest, "delegation.agents names %s twice", id)
		}
		seen[id] = true
	}
	return nil
}

// normalApprovalPolicy removes an empty policy ({}), which decides
// nothing a missing one does not.
func normalApprovalPolicy(p *mesh.ApprovalPolicy) *mesh.ApprovalPolicy {
	if p == nil || (len(p.Rules) == 0 && p.Default == "" && p.TimeoutSeconds == 0) {
		return nil
	}
	return p
}
