package taskqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go/jetstream"
)

// enqueue publishes the queue message of a pending run's next attempt. The
// message id includes the record revision, so a retried enqueue of the same
// state is dropped by JetStream while a later re-queue is not.
func (s *Service) enqueue(ctx context.Context, run *mesh.TaskRun) error {
	if !run.Delegated() {
		if _, err := s.consumer(ctx, run.TargetAgentID); err != nil {
			return err
		}
	}
	return s.publishQueued(ctx, run, fmt.Sprintf("%s.%d.%d", run.ID, run.Attempt+1, run.Revision))
}

// publishQueued publishes the queue message of run's next attempt under msgID.
func (s *Service) publishQueued(ctx context.Context, run *mesh.TaskRun, msgID string) error {
	body, _ := json.Marshal(meshapi.QueueMessage{TaskRunID: run.ID, Attempt: run.Attempt + 1})
	_, err := s.js.Publish(ctx, queueSubject(run), body, jetstream.WithMsgID(msgID))
	if err != nil {
		return fmt.Errorf("enqueue task run %s: %w", run.ID, err)
	}
	return nil
}

// queueSubject is where a run's queue message goes: its agent's queue, or,
// for a delegated run, the delegation service's.
func queueSubject(run *mesh.TaskRun) string {
	if run.Delegated() {
		return bus.DelegationQueueSubject(run.ID)
	}
	return bus.QueueSubject(run.TargetAgentID, run.ID)
}

// dequeue removes a run's queue messages (a canceled or failed pending run).
// Best effort: a message left behind is refused at claim and terminated.
func (s *Service) dequeue(ctx context.Context, run *mesh.TaskRun) {
	err := s.queue.Purge(ctx, jetstream.WithPurgeSubject(queueSubject(run)))
	if err != nil {
		s.cfg.Logger.Debug().Err(err).Str("task_run_id", run.ID).Msg("queue purge failed")
	}
}

// queued reports whether a run has a message in the queue (delivered and not
// yet acknowledged counts).
func (s *Service) queued(ctx context.Context, run *mesh.TaskRun) (bool, error) {
	_, err := s.queue.GetLastMsgForSubject(ctx, queueSubject(run))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	return err == nil, err
}

// consumer returns the agent's durable pull consumer, creating it only when
// it does not exist: its info is answered by the consumer itself, while a
// create (even of a consumer that exists) needs JetStream's meta leader,
// which a supercluster lacks while a region holding most of its servers is
// down. So once an agent has its consumer, queueing its runs needs no meta
// operation.
func (s *Service) consumer(ctx context.Context, agentID string) (jetstream.Consumer, error) {
	s.consumersMu.Lock()
	c, ok := s.consumers[agentID]
	s.consumersMu.Unlock()
	if ok {
		return c, nil
	}
	c, err := s.js.Consumer(ctx, bus.QueueStream, bus.QueueConsumer(agentID))
	if err == nil {
		s.consumersMu.Lock()
		s.consumers[agentID] = c
		s.consumersMu.Unlock()
		return c, nil
	}
	if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("queue consumer for agent %s: %w", agentID, err)
	}
	c, err = s.js.CreateOrUpdateConsumer(ctx, bus.QueueStream, jetstream.ConsumerConfig{
		Durable:       bus.QueueConsumer(agentID),
		Description:   "pending task runs of agent " + agentID,
		FilterSubject: bus.QueueFilter(agentID),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       s.cfg.AckWait,
		MaxDeliver:    -1,
		// A runtime pulls one message per free slot; a generous bound only
		// stops a misbehaving client from hoarding the queue.
		MaxAckPending: 1000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("queue consumer for agent %s: %w", agentID, err)
	}
	s.consumersMu.Lock()
	s.consumers[agentID] = c
	s.consumersMu.Unlock()
	return c, nil
}
