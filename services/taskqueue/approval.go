package taskqueue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Bounds of an approval request's fields.
const (
	maxApprovalIDLen    = 200
	maxApprovalToolLen  = 200
	maxApprovalInputLen = 64 << 10
)

// handleApproval answers a runtime whose host asks permission for a step
// (meshapi.ApprovalRequest): the agent's approval policy decides at once,
// or for "ask" the run waits in approval-required until a person decides
// (handleDecideApproval) or the policy's time limit passes, which denies
// the step. The request waits up to its Wait; the runtime asks again with
// the same tool_use_id until it has the decision.
func (s *Service) handleApproval(ctx context.Context, req *meshapi.ApprovalRequest) (*meshapi.ApprovalResponse, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	in := *req
	switch {
	case !mesh.ValidID(in.TaskRunID):
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "task_run_id is required")
	case in.ToolUseID == "" || len(in.ToolUseID) > maxApprovalIDLen:
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "tool_use_id is required, at most %d characters", maxApprovalIDLen)
	case in.Tool == "" || len(in.Tool) > maxApprovalToolLen:
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "tool is required, at most %d characters", maxApprovalToolLen)
	case len(in.Input) > maxApprovalInputLen:
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "input is larger than %d bytes", maxApprovalInputLen)
	case in.Wait < 0 || in.Wait > s.cfg.MaxPullWait:
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "wait must be between 0 and %s", s.cfg.MaxPullWait)
	}
	if err := s.runtimes.Check(ctx, agentID, runtimeID, false); err != nil {
		return nil, err
	}
	run, _, err := s.runs.Get(ctx, in.TaskRunID)
	if err != nil {
		return nil, notFound(in.TaskRunID, err)
	}
	if run.TargetAgentID != agentID {
		return nil, mesh.Errorf(mesh.CodeForbidden, "task run %s belongs to another agent", run.ID)
	}
	if a := decided(run, in.ToolUseID); a != nil {
		return answerOf(a), nil
	}
	if run.Status.Terminal() {
		// Canceled (or failed) while its host waited: nothing may run.
		return &meshapi.ApprovalResponse{Decision: mesh.ApprovalDeny, Reason: fmt.Sprintf("the task run is %s", run.Status)}, nil
	}
	asked := run.Status == mesh.StatusApprovalRequired && run.PendingApproval != nil && run.PendingApproval.ID == in.ToolUseID
	if !asked {
		var policy *mesh.ApprovalPolicy
		if a, ok := s.currentAgent(ctx, agentID); ok {
			policy = a.ApprovalPolicy
		}
		decision, rule := policy.Decide(in.Tool, in.Input)
		if decision != mesh.ApprovalAsk {
			var reason string
			if decision == mesh.ApprovalDeny {
				reason = denyReason(policy, rule, in.Tool)
			}
			return s.decideByPolicy(ctx, agentID, runtimeID, &in, mesh.Approval{Decision: decision, Reason: reason, Rule: rule})
		}
		now := time.Now().UTC()
		_, err := s.transition(ctx, in.TaskRunID, func(r *mesh.TaskRun) (string, error) {
			if r.Status == mesh.StatusApprovalRequired && r.PendingApproval != nil && r.PendingApproval.ID == in.ToolUseID {
				return "", errUnchanged
			}
			if r.Status == mesh.StatusApprovalRequired && r.TargetAgentID == agentID && r.HeldBy(runtimeID, in.Attempt) {
				// Another step of the host waits for a person: this one
				// is asked once that one is decided.
				return "", errAnotherStepWaits
			}
			if decided(r, in.ToolUseID) != nil {
				return "", errUnchanged
			}
			if err := r.CheckHeld(agentID, runtimeID, in.Attempt); err != nil {
				return "", err
			}
			r.Status = mesh.StatusApprovalRequired
			r.PendingApproval = &mesh.Approval{
				ID: in.ToolUseID, Tool: in.Tool, Input: in.Input, Rule: rule,
				RequestedAt: now, ExpiresAt: now.Add(policy.Timeout()),
			}
			return mesh.EventTaskRunApprovalRequested, nil
		})
		if errors.Is(err, errAnotherStepWaits) {
			resp := s.awaitChange(ctx, in.TaskRunID, in.Wait)
			return &resp, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return s.awaitApproval(ctx, in.TaskRunID, in.ToolUseID, in.Wait)
}

// decideByPolicy records the policy's decision of a step on the run (the
// step and its rule in d) and announces it; a step already decided is
// answered as it was.
func (s *Service) decideByPolicy(ctx context.Context, agentID, runtimeID string, in *meshapi.ApprovalRequest, d mesh.Approval) (*meshapi.ApprovalResponse, error) {
	var earlier *mesh.Approval
	_, err := s.transition(ctx, in.TaskRunID, func(r *mesh.TaskRun) (string, error) {
		if earlier = decided(r, in.ToolUseID); earlier != nil {
			return "", errUnchanged
		}
		if err := r.CheckHeld(agentID, runtimeID, in.Attempt); err != nil {
			return "", err
		}
		// Decided as asked: nothing waited, so it expired when asked.
		now := time.Now().UTC()
		d.ID, d.Tool, d.Input = in.ToolUseID, in.Tool, in.Input
		d.RequestedAt, d.ExpiresAt, d.DecidedAt, d.DecidedBy = now, now, &now, mesh.ApprovalByPolicy
		r.RecordApproval(d)
		return mesh.EventTaskRunApprovalDecided, nil
	})
	if err != nil {
		return nil, err
	}
	if earlier != nil {
		return answerOf(earlier), nil
	}
	return &meshapi.ApprovalResponse{Decision: d.Decision, Reason: d.Reason}, nil
}

// errAnotherStepWaits: the run already waits for a person's decision of
// another step of its host.
var errAnotherStepWaits = errors.New("another step waits for approval")

// awaitChange waits up to wait for the run to change and answers "not
// decided yet": the runtime asks again.
func (s *Service) awaitChange(ctx context.Context, runID string, wait time.Duration) meshapi.ApprovalResponse {
	changed, stop := s.index.watchRun(runID)
	defer stop()
	if run, _, err := s.runs.Get(ctx, runID); err != nil || run.Status != mesh.StatusApprovalRequired {
		return meshapi.ApprovalResponse{}
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-changed:
	case <-timer.C:
	case <-ctx.Done():
	case <-s.stopped:
	}
	return meshapi.ApprovalResponse{}
}

// awaitApproval waits up to wait for the step approvalID of the run to be
// decided, deciding it "deny" once its time limit passed.
func (s *Service) awaitApproval(ctx context.Context, runID, approvalID string, wait time.Duration) (*meshapi.ApprovalResponse, error) {
	until := time.Now().Add(wait)
	for {
		changed, stop := s.index.watchRun(runID)
		run, _, err := s.runs.Get(ctx, runID)
		if err != nil {
			stop()
			return nil, notFound(runID, err)
		}
		if a := decided(run, approvalID); a != nil {
			stop()
			return answerOf(a), nil
		}
		pending := run.PendingApproval
		if run.Status != mesh.StatusApprovalRequired || pending == nil || pending.ID != approvalID {
			stop()
			return &meshapi.ApprovalResponse{Decision: mesh.ApprovalDeny, Reason: fmt.Sprintf("the task run is %s", run.Status), Asked: true}, nil
		}
		now := time.Now()
		if !now.Before(pending.ExpiresAt) {
			stop()
			_, err := s.decideApproval(ctx, runID, approvalID, mesh.ApprovalDeny, "nobody decided within the approval policy's time limit", mesh.ApprovalTimeLimit)
			if err != nil && !errors.Is(err, mesh.ErrInvalidTransition) {
				return nil, err
			}
			continue
		}
		if !now.Before(until) {
			stop()
			return &meshapi.ApprovalResponse{}, nil
		}
		timer := time.NewTimer(min(until.Sub(now), pending.ExpiresAt.Sub(now)))
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
		case <-s.stopped:
		}
		timer.Stop()
		stop()
		if ctx.Err() != nil {
			return &meshapi.ApprovalResponse{}, nil
		}
		select {
		case <-s.stopped:
			return &meshapi.ApprovalResponse{}, nil
		default:
		}
	}
}

// decided returns the decision recorded for approvalID, if any.
func decided(r *mesh.TaskRun, approvalID string) *mesh.Approval {
	for i := len(r.Approvals) - 1; i >= 0; i-- {
		if r.Approvals[i].ID == approvalID {
			return &r.Approvals[i]
		}
	}
	return nil
}

func answerOf(a *mesh.Approval) *meshapi.ApprovalResponse {
	return &meshapi.ApprovalResponse{Decision: a.Decision, Reason: a.Reason, Asked: a.DecidedBy != mesh.ApprovalByPolicy}
}

func denyReason(p *mesh.ApprovalPolicy, rule, tool string) string {
	switch {
	case p == nil:
		return fmt.Sprintf("the agent has no approval policy: %s is not allowed", tool)
	case rule != "":
		return fmt.Sprintf("the agent's approval policy denies %s (rule %s)", tool, rule)
	}
	return fmt.Sprintf("the agent's approval policy denies %s by default", tool)
}

func notFound(id string, err error) error {
	if errors.Is(err, mesh.ErrNotFound) {
		return mesh.Errorf(mesh.CodeNotFound, "task run %s not found", id)
	}
	return err
}

// handleDecideApproval records a person's decision of the step a run waits
// for (meshapi.DecideApprovalRequest).
func (s *Service) handleDecideApproval(ctx context.Context, req *meshapi.DecideApprovalRequest) (*meshapi.TaskRunReply, error) {
	in := *req
	if in.Decision != mesh.ApprovalAllow && in.Decision != mesh.ApprovalDeny {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "decision must be allow or deny, not %q", in.Decision)
	}
	if len(in.Reason) > maxReasonLen {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "reason is longer than %d characters", maxReasonLen)
	}
	if in.By == "" {
		in.By = "owner"
	}
	run, err := s.decideApproval(ctx, in.TaskRunID, "", in.Decision, in.Reason, in.By)
	if err != nil {
		return nil, err
	}
	return &meshapi.TaskRunReply{TaskRun: *run.Public()}, nil
}

// decideApproval decides the step the run waits for (approvalID, or
// whichever when ""), records it on the run and puts the run back to
// running.
func (s *Service) decideApproval(ctx context.Context, runID, approvalID, decision, reason, by string) (*mesh.TaskRun, error) {
	return s.transition(ctx, runID, func(r *mesh.TaskRun) (string, error) {
		if r.Status != mesh.StatusApprovalRequired || r.PendingApproval == nil ||
			(approvalID != "" && r.PendingApproval.ID != approvalID) {
			e := mesh.Errorf(mesh.CodeInvalidTransition, "task run %s is %s: no step of it waits for approval", r.ID, r.Status)
			e.Status = r.Status
			return "", e
		}
		now := time.Now().UTC()
		a := *r.PendingApproval
		a.Decision, a.Reason, a.DecidedBy, a.DecidedAt = decision, reason, by, &now
		r.RecordApproval(a)
		r.PendingApproval = nil
		r.Status = mesh.StatusRunning
		return mesh.EventTaskRunApprovalDecided, nil
	})
}
