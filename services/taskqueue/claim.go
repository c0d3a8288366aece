package taskqueue

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

func (s *Service) handleClaim(ctx context.Context, in *meshapi.ClaimRequest) (*meshapi.TaskRunReply, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	run, err := s.claim(ctx, agentID, runtimeID, in.TaskRunID, in.Attempt)
	if err != nil {
		return nil, err
	}
	return &meshapi.TaskRunReply{TaskRun: *run}, nil
}

// claim moves a pending run to running for runtimeID. attempt is the attempt
// the offer named; an offer of an older attempt is stale. A
// repeated claim of the same attempt by the same runtime returns the run, so a
// runtime whose claim reply was lost may simply ask again.
func (s *Service) claim(ctx context.Context, agentID, runtimeID, runID string, attempt int) (*mesh.TaskRun, error) {
	if err := s.runtimes.Check(ctx, agentID, runtimeID, true); err != nil {
		return nil, err
	}
	return s.claimChecked(ctx, agentID, runtimeID, runID, attempt, "")
}

// claimChecked is claim for a runtime already checked to be active and
// online, by its request of key key ("": a claim of an offered run).
func (s *Service) claimChecked(ctx context.Context, agentID, runtimeID, runID string, attempt int, key string) (*mesh.TaskRun, error) {
	began := time.Now()
	// The agent's budgets decide with every edit answered before the run
	// was created, so a budget lowered then keeps the run from starting
	// even if the view that decided its create had not caught up.
	s.agentOfRuns(ctx, agentID, []string{runID})
	claimed := false
	var overBudget *budgetNotice
	run, err := s.transition(ctx, runID, func(r *mesh.TaskRun) (string, error) {
		// The mutation may run again on a fresh copy: only its last run counts.
		claimed, overBudget = false, nil
		if r.TargetAgentID != agentID {
			return "", mesh.Errorf(mesh.CodeForbidden, "task run %s belongs to another agent", r.ID)
		}
		if r.Status == mesh.StatusRunning && r.RuntimeID == runtimeID && r.Attempt == attempt {
			if key != "" && r.ClaimKey != "" && key != r.ClaimKey {
				// Claimed by another request of this runtime (a copy whose
				// index had not seen that claim offered it as pending): the
				// runtime holds it through that request, and would start it
				// twice.
				return "", conflict(r, "task run %s is already claimed by another request of this runtime", r.ID)
			}
			return "", errUnchanged
		}
		if r.Delegated() {
			// A delegated run is the delegation service's to take, never a runtime's.
			return "", conflict(r, "task run %s is delegated to another agent", r.ID)
		}
		// Only pending runs are claimed: the state machine refuses the rest.
		if r.Status == mesh.StatusPending && attempt != 0 && attempt != r.Attempt+1 {
			e := mesh.Errorf(mesh.CodeStaleAttempt, "offer of attempt %d is stale (next attempt is %d)", attempt, r.Attempt+1)
			e.Status = r.Status
			return "", e
		}
		if r.Status == mesh.StatusPending {
			if overBudget = s.dayBudgetSpent(r); overBudget != nil {
				overBudget.TaskRunID, overBudget.Action = r.ID, "canceled"
				overBudget.Message += ": the run was canceled before it started"
				return cancelForBudget(r, *overBudget), nil
			}
		}
		now := time.Now().UTC()
		r.Status = mesh.StatusRunning
		r.RuntimeID = runtimeID
		r.ClaimKey = key
		r.ClaimTakenUp = false
		r.Attempt++
		r.LeaseExpiresAt = s.leaseFromNow()
		r.ClaimedAt = &now
		r.Progress = nil
		claimed = true
		return mesh.EventTaskRunClaimed, nil
	})
	if err == nil && overBudget != nil {
		s.tellBudget(ctx, *overBudget)
		return nil, conflict(run, "task run %s was not claimed: %s", run.ID, overBudget.Message)
	}
	if err == nil && claimed {
		s.observeClaim(run)
		run = traceClaim(run, began)
	}
	if err == nil {
		run = s.withRunBudget(run)
	}
	return run, err
}

// withRunBudget returns the run to answer a claim with: with what its
// agent's per-run budget leaves it (RunBudget), for its host. The stored
// run is left as it is.
func (s *Service) withRunBudget(run *mesh.TaskRun) *mesh.TaskRun {
	b := s.budgetOf(run.TargetAgentID)
	if b == nil {
		return run
	}
	left := b.PerRun.Left(run.UsageTotal)
	if left == nil {
		return run
	}
	cp := *run
	cp.RunBudget = left
	return &cp
}

func (s *Service) handlePull(ctx context.Context, in *meshapi.PullRequest) (*meshapi.PullResponse, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	if in.Wait < 0 || in.Wait > s.cfg.MaxPullWait {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "wait must be between 0 and %s", s.cfg.MaxPullWait)
	}
	if err := checkKey(in.Key, in.Recover); err != nil {
		return nil, err
	}
	var run *mesh.TaskRun
	if in.Recover {
		// Asked for by a runtime that may have said goodbye: see
		// handleOffer.
		if err := s.runtimes.Check(ctx, agentID, runtimeID, false); err != nil {
			return nil, err
		}
		res, err := s.recoverClaims(ctx, agentID, runtimeID, in.Key)
		if err != nil {
			return nil, err
		}
		if len(res.Claimed) > 0 {
			run = &res.Claimed[0]
		}
	} else if run, err = s.pull(ctx, agentID, runtimeID, in.Wait, in.Key); err != nil {
		return nil, err
	}
	out := meshapi.PullResponse{TaskRun: run}
	// The run's task gets the agent's instructions with every edit
	// answered before the run was created.
	if run != nil {
		if a, ok := s.agentOfRuns(ctx, agentID, []string{run.ID}); ok {
			out.InstructionsDigest = a.InstructionsDigest
		}
	}
	return &out, nil
}

func (s *Service) handleClaimMany(ctx context.Context, in *meshapi.ClaimManyRequest) (*meshapi.ClaimManyResponse, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	if len(in.Claims) == 0 || len(in.Claims) > meshapi.MaxOffers {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "claims must name 1 to %d runs", meshapi.MaxOffers)
	}
	if err := checkKey(in.Key, false); err != nil {
		return nil, err
	}
	if err := s.runtimes.Check(ctx, agentID, runtimeID, true); err != nil {
		return nil, err
	}
	return s.claimMany(ctx, agentID, runtimeID, in.Claims, in.Key)
}

// claimMany claims each run at once, each under its own lock, and answers
// with the runs claimed in the order asked and why the others were not.
// A claim that failed for a reason other than the run's own state (the
// store could not be reached) fails the request, which the runtime sends
// again: the claims that succeeded are answered again then.
//
// key is that of the runtime's claiming offer request, if that is what
// claims (see claimPending).
func (s *Service) claimMany(ctx context.Context, agentID, runtimeID string, claims []meshapi.ClaimRequest, key string) (*meshapi.ClaimManyResponse, error) {
	runs := make([]*mesh.TaskRun, len(claims))
	errs := make([]error, len(claims))
	// The first is claimed on this goroutine, the others each on one of
	// their own, at the same time.
	var wg sync.WaitGroup
	for i, c := range claims[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i+1], errs[i+1] = s.claimChecked(ctx, agentID, runtimeID, c.TaskRunID, c.Attempt, key)
		}()
	}
	if len(claims) > 0 {
		runs[0], errs[0] = s.claimChecked(ctx, agentID, runtimeID, claims[0].TaskRunID, claims[0].Attempt, key)
	}
	wg.Wait()
	out := &meshapi.ClaimManyResponse{Claimed: []mesh.TaskRun{}}
	for i, err := range errs {
		switch {
		case err == nil:
			out.Claimed = append(out.Claimed, *runs[i])
		case meshapi.Unclaimable(err) || errors.Is(err, mesh.ErrForbidden):
			out.Refused = append(out.Refused, meshapi.ClaimRefusal{TaskRunID: claims[i].TaskRunID, Error: mesh.AsError(err)})
		default:
			return nil, err
		}
	}
	// The runs' tasks get the agent's instructions with every edit
	// answered before the runs were created.
	if len(out.Claimed) > 0 {
		if a, ok := s.agentOfRuns(ctx, agentID, runIDs(out.Claimed)); ok {
			out.Instructions = &a.Instructions
		}
	}
	return out, nil
}

// handleOffer names pending runs of the runtime's agent (dispatch.go), or
// claims them (meshapi.OfferRequest's Claim and Recover).
func (s *Service) handleOffer(ctx context.Context, in *meshapi.OfferRequest) (*meshapi.OfferResponse, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	// A runtime that is stopping says goodbye (it shows offline at once)
	// and then asks for the runs claimed for answers it lost, to give them
	// back: that question needs no presence, the claims do.
	if err := s.runtimes.Check(ctx, agentID, runtimeID, !in.Recover); err != nil {
		return nil, err
	}
	if err := checkOffer(in, s.cfg.MaxPullWait); err != nil {
		return nil, err
	}
	if in.Recover {
		return s.recoverClaims(ctx, agentID, runtimeID, in.Key)
	}
	n := max(in.Max, 1)
	if in.Claim {
		res, err := s.claimPending(ctx, agentID, runtimeID, in.Key, n)
		if err != nil || len(res.Claimed) > 0 {
			return res, err
		}
	}
	offers, err := s.waitForOffers(ctx, runtimeID, agentID, n, in.Wait)
	if err != nil {
		return nil, err
	}
	return &meshapi.OfferResponse{Offers: offers}, nil
}

// claimPending claims, under key, up to n runs of the agent that this
// copy may offer now, without waiting: none when there are none, or
// others took them first.
func (s *Service) claimPending(ctx context.Context, agentID, runtimeID, key string, n int) (*meshapi.OfferResponse, error) {
	offers, _ := s.takeOffers(ctx, agentID, n)
	if len(offers) == 0 {
		return &meshapi.OfferResponse{}, nil
	}
	claims := make([]meshapi.ClaimRequest, len(offers))
	for i, o := range offers {
		claims[i] = meshapi.ClaimRequest{TaskRunID: o.TaskRunID, Attempt: o.Attempt}
	}
	res, err := s.claimMany(ctx, agentID, runtimeID, claims, key)
	if err != nil {
		return nil, err
	}
	return &meshapi.OfferResponse{Claimed: res.Claimed, Instructions: res.Instructions}, nil
}

// checkKey checks the key of a claiming request (or of the request that
// asks about one, or gives its run back), which required says it needs.
func checkKey(key string, required bool) error {
	if (key != "" || required) && !mesh.ValidID(key) {
		return mesh.Errorf(mesh.CodeInvalidRequest, "a claiming request's key is a UUID in lower-case hex")
	}
	return nil
}

// errNotHeldUnder is a run no longer held under the key a runtime asked
// about.
var errNotHeldUnder = errors.New("taskqueue: not held under the key")

// recoverSync bounds the wait for the index to hold every write stored
// before a runtime asked about a lost answer: the runtime asks again.
const recoverSync = time.Second

// recoverClaims answers a runtime that lost the answer to its claiming
// request of key key with the runs claimed under it that it still holds:
// of the few it holds, those whose records carry the key.
func (s *Service) recoverClaims(ctx context.Context, agentID, runtimeID, key string) (*meshapi.OfferResponse, error) {
	// Runs the index holds under the key are answered at once: their
	// leases are running. "Nothing" ends the runtime's asking once late
	// enough, and the claim may have been stored by another copy a moment
	// ago (or this copy's watch held up while a node was lost), so it is
	// said only once the index holds every write stored before the
	// question.
	if out, err := s.claimedUnder(ctx, agentID, runtimeID, key); err != nil || len(out.Claimed) > 0 {
		return out, err
	}
	sctx, cancel := context.WithTimeout(ctx, recoverSync)
	err := s.runView.Sync(sctx)
	cancel()
	if err != nil {
		return nil, mesh.Errorf(mesh.CodeUnavailable, "the runs claimed for a lost answer cannot be listed right now: %v", err)
	}
	return s.claimedUnder(ctx, agentID, runtimeID, key)
}

// claimedUnder is what the index knows of the runs claimed under key that
// the runtime still holds. Each is marked taken up in its record first,
// so that a give-back under the key (ReleaseRequest.Key) can no longer
// take it from the runtime.
func (s *Service) claimedUnder(ctx context.Context, agentID, runtimeID, key string) (*meshapi.OfferResponse, error) {
	out := &meshapi.OfferResponse{}
	heldUnder := func(r *mesh.TaskRun) bool {
		return heldFor(r, agentID, runtimeID) && r.ClaimKey == key
	}
	held, err := s.heldMatching(ctx, runtimeID, nil, heldUnder)
	if err != nil {
		return nil, err
	}
	for _, run := range held {
		if !run.ClaimTakenUp {
			run, err = s.transition(ctx, run.ID, func(r *mesh.TaskRun) (string, error) {
				switch {
				case !heldUnder(r):
					return "", errNotHeldUnder
				case r.ClaimTakenUp:
					return "", errUnchanged
				}
				r.ClaimTakenUp = true
				return "", nil
			})
			if errors.Is(err, errNotHeldUnder) {
				// Given back (or ended) since: the runtime does not hold it.
				continue
			}
			if err != nil {
				return nil, err
			}
		}
		// Answered as its claim would have been, with what the agent's
		// per-run budget leaves it.
		out.Claimed = append(out.Claimed, *s.withRunBudget(run))
	}
	slices.SortFunc(out.Claimed, func(a, b mesh.TaskRun) int { return a.CreatedAt.Compare(b.CreatedAt) })
	if len(out.Claimed) > 0 {
		if a, ok := s.agentOfRuns(ctx, agentID, runIDs(out.Claimed)); ok {
			out.Instructions = &a.Instructions
		}
	}
	return out, nil
}

// heldFor says whether r is running, claimed by runtimeID of agentID.
func heldFor(r *mesh.TaskRun, agentID, runtimeID string) bool {
	return r.Status == mesh.StatusRunning && r.RuntimeID == runtimeID && r.TargetAgentID == agentID
}

// heldMatching reads from the store each run the index says runtimeID
// holds, except those in skip, and returns those match accepts (the index
// knows who holds a run, not under which key or whether it was taken up).
// A run gone from the store is passed over; the first other failure to
// read one is returned.
func (s *Service) heldMatching(ctx context.Context, runtimeID string, skip map[string]bool, match func(*mesh.TaskRun) bool) ([]*mesh.TaskRun, error) {
	var out []*mesh.TaskRun
	for _, id := range s.index.runningBy(runtimeID) {
		if skip[id] {
			continue
		}
		run, _, err := s.runs.Get(ctx, id)
		switch {
		case errors.Is(err, mesh.ErrNotFound):
		case err != nil:
			return nil, err
		case match(run):
			out = append(out, run)
		}
	}
	return out, nil
}

// pull claims the next pending run of the agent on behalf of a runtime
// that does not claim itself (the HTTP transport), waiting up to wait for
// one to arrive. It returns nil when none did.
func (s *Service) pull(ctx context.Context, agentID, runtimeID string, wait time.Duration, key string) (*mesh.TaskRun, error) {
	if err := s.runtimes.Check(ctx, agentID, runtimeID, true); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		offers, err := s.waitForOffers(ctx, runtimeID, agentID, 1, max(time.Until(deadline), 0))
		if err != nil || len(offers) == 0 {
			return nil, err
		}
		// Still active and online after the wait.
		if err := s.runtimes.Check(ctx, agentID, runtimeID, true); err != nil {
			return nil, err
		}
		run, err := s.claimChecked(ctx, agentID, runtimeID, offers[0].TaskRunID, offers[0].Attempt, key)
		if err == nil || !meshapi.Unclaimable(err) {
			return run, err
		}
		// Taken by another, or ended meanwhile: the next one.
	}
}

func (s *Service) handleRelease(ctx context.Context, in *meshapi.ReleaseRequest) (*meshapi.TaskRunReply, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkKey(in.Key, false); err != nil {
		return nil, err
	}
	run, err := s.transition(ctx, in.TaskRunID, func(r *mesh.TaskRun) (string, error) {
		if err := r.CheckHeld(agentID, runtimeID, in.Attempt); err != nil {
			return "", err
		}
		if in.Key != "" && (r.ClaimKey != in.Key || r.ClaimTakenUp) {
			return "", conflict(r, "task run %s is held by its runtime, which asked for it under the key of its claim", r.ID)
		}
		return giveBack(r), nil
	})
	if err != nil {
		return nil, err
	}
	return &meshapi.TaskRunReply{TaskRun: *run.Public()}, nil
}

// giveBack returns a run its runtime never started to pending, its
// attempt undone, and says the event of it.
func giveBack(r *mesh.TaskRun) string {
	r.Status = mesh.StatusPending
	r.RuntimeID = ""
	r.Attempt--
	r.LeaseExpiresAt = nil
	r.ClaimedAt = nil
	return mesh.EventTaskRunRequeued
}
