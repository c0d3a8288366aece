package delegation

import (
	"context"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// The delegation service takes delegated runs the way a runtime takes its
// agent's: it asks the task queue for offers (a long-poll request), claims
// each offered run, and the claim, checked against the run record,
// decides.

// offerWait is how long one offer request waits for a delegated run.
const offerWait = 25 * time.Second

// startQueue starts taking runs, until the service stops.
func (s *Service) startQueue() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		backoff := bus.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2}
		for s.ctx.Err() == nil {
			ctx, cancel := context.WithTimeout(s.ctx, offerWait+5*time.Second)
			offers, err := s.client.DelegateOffer(ctx, meshapi.OfferRequest{Wait: offerWait, Max: 16})
			cancel()
			if err != nil {
				if s.ctx.Err() == nil {
					s.log.Warn().Err(err).Msg("delegated runs not offered; asking again")
				}
				_ = backoff.Sleep(s.ctx) // the loop ends when s.ctx does
				continue
			}
			backoff.Reset()
			for _, o := range offers {
				s.take(o)
			}
		}
	}()
}

// take claims an offered delegated run and starts delegating it.
func (s *Service) take(o meshapi.Offer) {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	run, err := s.client.DelegateClaim(ctx, meshapi.DelegateClaimRequest{TaskRunID: o.TaskRunID, Attempt: o.Attempt})
	switch {
	case err == nil:
		s.startFollow(run)
	case meshapi.Unclaimable(err):
		// Canceled meanwhile, or taken already: nothing to take.
	default:
		s.log.Warn().Err(err).Str("task_run_id", o.TaskRunID).Msg("delegated run not claimed; it is offered again")
	}
}

// resume follows again, after a start, the delegations that were in
// progress: the delegated runs that are running (held by this service) or
// waiting for input (their delegate asked a question).
func (s *Service) resume() {
	defer s.wg.Done()
	for _, status := range []mesh.Status{mesh.StatusRunning, mesh.StatusInputRequired} {
		cursor := ""
		for {
			ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
			page, err := s.client.ListTaskRuns(ctx, meshapi.ListTaskRunsRequest{Status: status, Cursor: cursor, Limit: meshapi.MaxListLimit})
			cancel()
			if err != nil {
				if s.ctx.Err() == nil {
					s.log.Error().Err(err).Msg("delegations in progress could not be listed; they are not followed until the next start")
				}
				return
			}
			for i := range page.TaskRuns {
				run := &page.TaskRuns[i]
				if run.Delegated() && run.RuntimeID == "" {
					s.startFollow(run)
				}
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
	}
}

// renew keeps the leases of the runs this service holds (the renewer runs
// it at a third of the lease).
func (s *Service) renew(ctx context.Context) {
	ids := s.held()
	for len(ids) > 0 {
		n := min(len(ids), 1000)
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if _, err := s.client.DelegateRenew(cctx, meshapi.DelegateRenewRequest{TaskRunIDs: ids[:n]}); err != nil && ctx.Err() == nil {
			s.log.Warn().Err(err).Msg("leases of delegated runs not renewed; retrying")
		}
		cancel()
		ids = ids[n:]
	}
}
