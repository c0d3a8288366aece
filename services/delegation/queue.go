package delegation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// The delegation service takes delegated runs from its own queue, the way a
// runtime takes its agent's: one durable pull consumer of the work-queue
// stream, a claim checked against the run record, and the message settled
// by the claim's outcome.

// startQueue creates the service's consumer and starts taking runs.
func (s *Service) startQueue(ctx context.Context) error {
	cons, err := s.js.CreateOrUpdateConsumer(ctx, bus.QueueStream, jetstream.ConsumerConfig{
		Durable:       bus.DelegationQueueConsumer,
		Description:   "delegated task runs, for the delegation service",
		FilterSubject: bus.DelegationQueueFilter(),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       30 * time.Second,
		MaxDeliver:    -1,
		MaxAckPending: 1000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("delegation: queue consumer: %w", err)
	}
	s.consume, err = cons.Consume(s.onQueueMessage)
	if err != nil {
		return fmt.Errorf("delegation: consume queue: %w", err)
	}
	return nil
}

// onQueueMessage claims the run of a queue message and starts delegating it.
func (s *Service) onQueueMessage(msg jetstream.Msg) {
	var qm meshapi.QueueMessage
	if err := json.Unmarshal(msg.Data(), &qm); err != nil {
		_ = msg.Term()
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	run, err := s.client.DelegateClaim(ctx, meshapi.DelegateClaimRequest{TaskRunID: qm.TaskRunID, Attempt: qm.Attempt})
	var me *mesh.Error
	switch {
	case err == nil:
		_ = msg.Ack()
		s.startFollow(run)
	case errors.As(err, &me) && (me.Code == mesh.CodeInvalidTransition || me.Code == mesh.CodeStaleAttempt || me.Code == mesh.CodeNotFound):
		// Canceled meanwhile, or a duplicate message: nothing to take.
		_ = msg.Term()
	default:
		s.log.Warn().Err(err).Str("task_run_id", qm.TaskRunID).Msg("delegated run not claimed; it is offered again")
		_ = msg.NakWithDelay(time.Second)
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
