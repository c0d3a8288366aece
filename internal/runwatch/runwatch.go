// Package runwatch follows one task run on the event stream, for the
// gateway's endpoints that answer when a run reaches a state (a synchronous
// call) or stream its changes: an ordered consumer of the run's subject,
// started before the run is read, so no change falls between.
package runwatch

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Watcher reads a run's changes from now on.
type Watcher struct {
	msgs jetstream.MessagesContext
}

// Watch starts following a run. Read the run after this to know where the
// changes start from.
func Watch(ctx context.Context, js jetstream.JetStream, run *mesh.TaskRun) (*Watcher, error) {
	cons, err := js.OrderedConsumer(ctx, bus.EventStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{bus.EventSubject(run.TargetAgentID, string(mesh.KindTaskRun), run.ID)},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("follow task run %s: %w", run.ID, err)
	}
	msgs, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("follow task run %s: %w", run.ID, err)
	}
	return &Watcher{msgs: msgs}, nil
}

// Next returns the run as its next event tells it (with the revision the
// event's sequence says), blocking until there is one or ctx ends.
func (w *Watcher) Next(ctx context.Context) (*mesh.TaskRun, error) {
	for {
		m, err := w.msgs.Next(jetstream.NextContext(ctx))
		if err != nil {
			return nil, err
		}
		if run, err := bus.TaskRunOf(m.Headers(), m.Data()); err == nil {
			return run, nil
		}
	}
}

// Stop ends the watch.
func (w *Watcher) Stop() { w.msgs.Stop() }

// Settled reports whether a caller waiting for a run stops waiting: the run
// ended, or asks for input.
func Settled(s mesh.Status) bool { return s.Terminal() || s == mesh.StatusInputRequired }

// Await waits until the run is Settled, for at most wait, and returns it as
// it is then.
func Await(ctx context.Context, js jetstream.JetStream, client *meshapi.Client, run *mesh.TaskRun, wait time.Duration) (*mesh.TaskRun, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	w, err := Watch(wctx, js, run)
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	cur, err := client.GetTaskRun(wctx, run.ID)
	if err != nil {
		return nil, err
	}
	for !Settled(cur.Status) {
		next, err := w.Next(wctx)
		if err != nil {
			// Out of time (or the caller left): the run as it is.
			return client.GetTaskRun(context.WithoutCancel(ctx), run.ID)
		}
		if next.ID == cur.ID && next.Revision > cur.Revision {
			cur = next
		}
	}
	return cur, nil
}
