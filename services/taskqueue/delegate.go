package taskqueue

import (
	"context"
	"encoding/json"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Delegated runs are held by the delegation service the way a claimed run is
// held by a runtime: it claims the run from its own queue (status running,
// no runtime id, a lease), renews the lease while the delegate works, links
// the delegate's run, mirrors its progress, and ends the run with the
// delegate's outcome. Each step is a compare-and-set transition like every
// other, so a stale or repeated step can never change a run twice.

// heldByDelegation explains why the delegation service may not act on run.
func heldByDelegation(r *mesh.TaskRun) error {
	if !r.Delegated() {
		return conflict(r, "task run %s is not delegated", r.ID)
	}
	if r.Status != mesh.StatusRunning {
		return conflict(r, "task run %s is %s", r.ID, r.Status)
	}
	return nil
}

// setRemoteState records the delegate's own state name, when it gave one.
// The delegation is replaced, not changed in place: the run being mutated
// may share it with the copy kept of the run's last stored version.
func setRemoteState(r *mesh.TaskRun, state string) {
	if state == "" {
		return
	}
	d := *r.DelegatedTo
	d.RemoteState = state
	r.DelegatedTo = &d
}

// handleDelegateOffer names delegated pending runs for the delegation
// service, as handleOffer does for a runtime.
func (s *Service) handleDelegateOffer(ctx context.Context, in *meshapi.OfferRequest) (*meshapi.OfferResponse, error) {
	if err := checkOffer(in, s.cfg.MaxPullWait); err != nil {
		return nil, err
	}
	if in.Claim || in.Recover {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "this offer only names runs: they are claimed on their own")
	}
	offers, err := s.waitForOffers(ctx, delegationQueue, delegationQueue, max(in.Max, 1), in.Wait)
	if err != nil {
		return nil, err
	}
	return &meshapi.OfferResponse{Offers: offers}, nil
}

func (s *Service) handleDelegateClaim(ctx context.Context, in *meshapi.DelegateClaimRequest) (*meshapi.TaskRunReply, error) {
	began := time.Now()
	run, err := s.transition(ctx, in.TaskRunID, func(r *mesh.TaskRun) (string, error) {
		if !r.Delegated() {
			return "", conflict(r, "task run %s is not delegated", r.ID)
		}
		if r.Status == mesh.StatusRunning && (in.Attempt == 0 || in.Attempt == r.Attempt) {
			// A repeated claim (its reply was lost, or the service restarted).
			return "", errUnchanged
		}
		// Only pending runs are claimed: the state machine refuses the rest.
		if r.Status == mesh.StatusPending && in.Attempt != 0 && in.Attempt != r.Attempt+1 {
			e := mesh.Errorf(mesh.CodeStaleAttempt, "offer of attempt %d is stale (next attempt is %d)", in.Attempt, r.Attempt+1)
			e.Status = r.Status
			return "", e
		}
		now := time.Now().UTC()
		r.Status = mesh.StatusRunning
		r.RuntimeID = ""
		r.Attempt++
		r.LeaseExpiresAt = s.leaseFromNow()
		r.ClaimedAt = &now
		r.Progress = nil
		return mesh.EventTaskRunClaimed, nil
	})
	if err != nil {
		return nil, err
	}
	// The delegation service continues the run's trace, as a runtime does.
	answer := run.Public()
	answer.TraceParent = traceClaim(run, began).TraceParent
	return &meshapi.TaskRunReply{TaskRun: *answer}, nil
}

func (s *Service) handleDelegateLink(ctx context.Context, in *meshapi.DelegateLinkRequest) (*meshapi.TaskRunReply, error) {
	to := in.DelegatedTo
	if to.TaskRunID == "" && to.RemoteTaskID == "" {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "delegated_to needs the delegate's task_run_id or remote_task_id")
	}
	run, err := s.transition(ctx, in.TaskRunID, func(r *mesh.TaskRun) (string, error) {
		if err := heldByDelegation(r); err != nil {
			return "", err
		}
		if r.DelegatedTo.TaskRunID == to.TaskRunID && r.DelegatedTo.RemoteTaskID == to.RemoteTaskID &&
			r.DelegatedTo.Attempt == r.Attempt && r.DelegatedTo.DelegatedAt != nil {
			return "", errUnchanged
		}
		now := time.Now().UTC()
		d := *r.DelegatedTo
		d.TaskRunID, d.RemoteTaskID, d.DelegatedAt, d.Attempt = to.TaskRunID, to.RemoteTaskID, &now, r.Attempt
		if to.RemoteState != "" {
			d.RemoteState = to.RemoteState
		}
		r.DelegatedTo = &d
		r.LeaseExpiresAt = s.leaseFromNow()
		return mesh.EventTaskRunDelegated, nil
	})
	if err != nil {
		return nil, err
	}
	return &meshapi.TaskRunReply{TaskRun: *run.Public()}, nil
}

func (s *Service) handleDelegateRenew(ctx context.Context, in *meshapi.DelegateRenewRequest) (*meshapi.RenewResponse, error) {
	if len(in.TaskRunIDs) > maxRenewal {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "at most %d task runs per renewal", maxRenewal)
	}
	return s.renewHeld(ctx, dedupe(in.TaskRunIDs), heldByDelegation)
}

func (s *Service) handleDelegateProgress(ctx context.Context, in *meshapi.DelegateProgressRequest) (*meshapi.TaskRunReply, error) {
	if err := checkProgress(in.Message, in.Percent); err != nil {
		return nil, err
	}
	run, err := s.transition(ctx, in.TaskRunID, func(r *mesh.TaskRun) (string, error) {
		if err := heldByDelegation(r); err != nil {
			return "", err
		}
		r.Progress = &mesh.Progress{Message: in.Message, Percent: in.Percent, UpdatedAt: time.Now().UTC()}
		setRemoteState(r, in.RemoteState)
		r.LeaseExpiresAt = s.leaseFromNow()
		return mesh.EventTaskRunProgress, nil
	})
	if err != nil {
		return nil, err
	}
	return &meshapi.TaskRunReply{TaskRun: *run.Public()}, nil
}

func (s *Service) handleDelegateEnd(ctx context.Context, in *meshapi.DelegateEndRequest) (*meshapi.TaskRunReply, error) {
	switch in.Status {
	case mesh.StatusCompleted, mesh.StatusInputRequired:
		if len(in.Output) == 0 || string(in.Output) == "null" {
			in.Output = json.RawMessage(`{}`)
		}
		if !isJSONObject(in.Output) {
			return nil, mesh.Errorf(mesh.CodeInvalidRequest, "output must be a JSON object")
		}
		in.Error = nil
	case mesh.StatusFailed, mesh.StatusCanceled:
		if in.Error == nil || in.Error.Code == "" || in.Error.Message == "" {
			return nil, mesh.Errorf(mesh.CodeInvalidRequest, "a failed or canceled run needs an error with a code and a message")
		}
	default:
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "status must be completed, failed, canceled or input-required")
	}
	run, err := s.transition(ctx, in.TaskRunID, func(r *mesh.TaskRun) (string, error) {
		if r.Status == in.Status && r.Delegated() {
			return "", errUnchanged
		}
		if err := heldByDelegation(r); err != nil {
			return "", err
		}
		now := time.Now().UTC()
		r.Status = in.Status
		r.Output = in.Output
		r.Error = in.Error
		setRemoteState(r, in.RemoteState)
		if in.Status.Terminal() {
			r.EndedAt = &now
		}
		r.LeaseExpiresAt = nil
		return mesh.TaskRunEventType(in.Status), nil
	})
	if err != nil {
		return nil, err
	}
	return &meshapi.TaskRunReply{TaskRun: *run.Public()}, nil
}
