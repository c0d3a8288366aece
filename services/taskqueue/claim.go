package taskqueue

import (
	"context"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go/jetstream"
)

// runtimeOf parses the trusted agent and runtime ids from a runtime subject.
func runtimeOf(req *bus.Request) (agentID, runtimeID string, err error) {
	agentID, runtimeID, _, ok := bus.ParseRuntimeSubject(req.Subject)
	if !ok || !mesh.ValidID(agentID) || !mesh.ValidID(runtimeID) {
		return "", "", mesh.Errorf(mesh.CodeInvalidRequest, "malformed runtime subject")
	}
	return agentID, runtimeID, nil
}

func (s *Service) handleHello(ctx context.Context, req *bus.Request) (any, error) {
	agentID, runtimeID, err := runtimeOf(req)
	if err != nil {
		return nil, err
	}
	if err := s.runtimes.Check(ctx, agentID, runtimeID, false); err != nil {
		return nil, err
	}
	if _, err := s.consumer(ctx, agentID); err != nil {
		return nil, err
	}
	resp := meshapi.HelloResponse{
		AgentID:            agentID,
		RuntimeID:          runtimeID,
		Stream:             bus.QueueStream,
		Consumer:           bus.QueueConsumer(agentID),
		JSAPIPrefix:        bus.JetStreamAPIPrefix,
		LeaseMS:            s.cfg.Lease.Milliseconds(),
		HeartbeatTimeoutMS: s.cfg.HeartbeatTimeout.Milliseconds(),
	}
	if a, ok := s.agents.Get(agentID); ok {
		resp.Instructions = a.Instructions
	}
	return resp, nil
}

func (s *Service) handleClaim(ctx context.Context, req *bus.Request) (any, error) {
	agentID, runtimeID, err := runtimeOf(req)
	if err != nil {
		return nil, err
	}
	var in meshapi.ClaimRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	run, err := s.claim(ctx, agentID, runtimeID, in.TaskRunID, in.Attempt)
	if err != nil {
		return nil, err
	}
	return meshapi.TaskRunReply{TaskRun: *run}, nil
}

// claim moves a pending run to running for runtimeID. attempt is the attempt
// the queue message was for; a message for an older attempt is stale. A
// repeated claim of the same attempt by the same runtime returns the run, so a
// runtime whose claim reply was lost may simply ask again.
func (s *Service) claim(ctx context.Context, agentID, runtimeID, runID string, attempt int) (*mesh.TaskRun, error) {
	began := time.Now()
	if err := s.runtimes.Check(ctx, agentID, runtimeID, true); err != nil {
		return nil, err
	}
	claimed := false
	run, err := s.transition(ctx, runID, func(r *mesh.TaskRun) (string, error) {
		// The mutation may run again on a fresh copy: only its last run counts.
		claimed = false
		if r.TargetAgentID != agentID {
			return "", mesh.Errorf(mesh.CodeForbidden, "task run %s belongs to another agent", r.ID)
		}
		if r.Status == mesh.StatusRunning && r.RuntimeID == runtimeID && r.Attempt == attempt {
			return "", errUnchanged
		}
		if r.Delegated() {
			// A delegated run is the delegation service's to take, never a runtime's.
			return "", conflict(r, "task run %s is delegated to another agent", r.ID)
		}
		// Only pending runs are claimed: the state machine refuses the rest.
		if r.Status == mesh.StatusPending && attempt != 0 && attempt != r.Attempt+1 {
			e := mesh.Errorf(mesh.CodeStaleAttempt, "queue message for attempt %d is stale (next attempt is %d)", attempt, r.Attempt+1)
			e.Status = r.Status
			return "", e
		}
		now := time.Now().UTC()
		r.Status = mesh.StatusRunning
		r.RuntimeID = runtimeID
		r.Attempt++
		r.LeaseExpiresAt = s.leaseFromNow()
		r.ClaimedAt = &now
		r.Progress = nil
		claimed = true
		return mesh.EventTaskRunClaimed, nil
	})
	if err == nil && claimed && s.claimLatency != nil {
		s.claimLatency.Observe(run.ClaimedAt.Sub(run.CreatedAt).Seconds())
	}
	if err == nil && claimed {
		run = traceClaim(run, began)
	}
	return run, err
}

func (s *Service) handlePull(ctx context.Context, req *bus.Request) (any, error) {
	agentID, runtimeID, err := runtimeOf(req)
	if err != nil {
		return nil, err
	}
	var in meshapi.PullRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if in.Wait < 0 || in.Wait > s.cfg.MaxPullWait {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "wait must be between 0 and %s", s.cfg.MaxPullWait)
	}
	run, err := s.pull(ctx, agentID, runtimeID, in.Wait)
	if err != nil {
		return nil, err
	}
	return meshapi.PullResponse{TaskRun: run}, nil
}

// minFetchWait is the shortest a pull waits on the queue. A request that does
// not wait at all is answered from the consumer's count of pending messages,
// which JetStream updates a moment after it acknowledges a publish, so a run
// created just before would be missed.
const minFetchWait = 100 * time.Millisecond

// pull claims the next pending run of the agent on behalf of a runtime that
// does not fetch from JetStream itself (the HTTP transport), waiting up to
// wait for one to arrive. It returns nil when none did.
func (s *Service) pull(ctx context.Context, agentID, runtimeID string, wait time.Duration) (*mesh.TaskRun, error) {
	if err := s.runtimes.Check(ctx, agentID, runtimeID, true); err != nil {
		return nil, err
	}
	cons, err := s.consumer(ctx, agentID)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		remaining := time.Until(deadline)
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(max(remaining, minFetchWait)))
		if err != nil {
			return nil, err
		}
		got := false
		for msg := range batch.Messages() {
			got = true
			run, err := s.claimMessage(ctx, agentID, runtimeID, msg)
			if err != nil || run != nil {
				return run, err
			}
		}
		if !got && (remaining < minFetchWait || ctx.Err() != nil) {
			if ctx.Err() == nil && time.Since(deadline) < pendingSettle && hasPending(ctx, cons) {
				// Stored but not yet offered to the consumer (a loaded
				// server tells it a moment after the publish's ack): a
				// run whose creation was answered is handed out.
				continue
			}
			return nil, nil
		}
	}
}

// pendingSettle bounds how long a pull that found nothing keeps fetching
// while the consumer counts messages not yet offered to it.
const pendingSettle = 2 * time.Second

// hasPending reports whether the consumer holds messages not yet delivered.
func hasPending(ctx context.Context, cons jetstream.Consumer) bool {
	info, err := cons.Info(ctx)
	return err == nil && info.NumPending > 0
}

// claimMessage claims the run of a fetched queue message and settles the
// message (meshapi.ClaimQueued). It returns nil, nil for a message that was
// skipped.
func (s *Service) claimMessage(ctx context.Context, agentID, runtimeID string, msg jetstream.Msg) (*mesh.TaskRun, error) {
	return meshapi.ClaimQueued(msg, func(qm meshapi.QueueMessage) (*mesh.TaskRun, error) {
		return s.claim(ctx, agentID, runtimeID, qm.TaskRunID, qm.Attempt)
	})
}

func (s *Service) handleRelease(ctx context.Context, req *bus.Request) (any, error) {
	agentID, runtimeID, err := runtimeOf(req)
	if err != nil {
		return nil, err
	}
	var in meshapi.ReleaseRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	run, err := s.transition(ctx, in.TaskRunID, func(r *mesh.TaskRun) (string, error) {
		if err := r.CheckHeld(agentID, runtimeID, in.Attempt); err != nil {
			return "", err
		}
		r.Status = mesh.StatusPending
		r.RuntimeID = ""
		r.Attempt--
		r.LeaseExpiresAt = nil
		r.ClaimedAt = nil
		return mesh.EventTaskRunRequeued, nil
	})
	if err != nil {
		return nil, err
	}
	s.enqueueOrRetry(ctx, run)
	return meshapi.TaskRunReply{TaskRun: *run.Public()}, nil
}
