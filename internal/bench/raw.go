package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/jetstream"
)

// rawCycle performs, directly against JetStream, the operations one task-run
// cycle of the service layer performs (create: conversation + record create,
// created event, queue publish; claim: fetch, record read + compare-and-set,
// claimed event, ack; complete: record read + compare-and-set, completed
// event), with the same concurrency, so the service layer's overhead is a ratio.
func rawCycle(ctx context.Context, conn, runtimeConn *bus.Conn, agents int, window time.Duration) (float64, Summary, error) {
	js := conn.JS
	kv, err := js.KeyValue(ctx, bus.BucketRuns)
	if err != nil {
		return 0, Summary{}, err
	}
	convs, err := js.KeyValue(ctx, bus.BucketConversations)
	if err != nil {
		return 0, Summary{}, err
	}
	var done atomic.Int64
	claimLat := &latencies{}
	created := sync.Map{}
	wctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	var wg sync.WaitGroup
	for a := 0; a < agents; a++ {
		agent := mesh.NewID()
		cons, err := runtimeConn.JS.CreateOrUpdateConsumer(ctx, bus.QueueStream, jetstream.ConsumerConfig{
			Durable: "raw_" + agent, FilterSubject: bus.QueueFilter(agent), AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
		})
		if err != nil {
			return 0, Summary{}, err
		}
		slots := make(chan struct{}, 2)
		wg.Add(2)
		go func() { // producer
			defer wg.Done()
			for wctx.Err() == nil {
				select {
				case slots <- struct{}{}:
				case <-wctx.Done():
					return
				}
				run := mesh.TaskRun{ID: mesh.NewID(), TargetAgentID: agent, Status: mesh.StatusPending, Input: json.RawMessage(`{"text":"bench"}`), CreatedAt: time.Now()}
				body, _ := json.Marshal(run)
				if _, err := convs.Create(ctx, mesh.NewID(), []byte(`{}`)); err != nil {
					return
				}
				if _, err := kv.Create(ctx, run.ID, body); err != nil {
					return
				}
				created.Store(run.ID, time.Now())
				_, _ = js.Publish(ctx, bus.EventSubject(agent, "task_run", run.ID), body)
				_, _ = js.Publish(ctx, bus.QueueSubject(agent, run.ID), []byte(fmt.Sprintf(`{"task_run_id":%q,"attempt":1}`, run.ID)))
			}
		}()
		go func() { // consumer: claim and complete
			defer wg.Done()
			for wctx.Err() == nil {
				batch, err := cons.Fetch(1, jetstream.FetchContext(wctx))
				if err != nil {
					return
				}
				for msg := range batch.Messages() {
					var qm struct {
						TaskRunID string `json:"task_run_id"`
					}
					_ = json.Unmarshal(msg.Data(), &qm)
					for _, status := range []mesh.Status{mesh.StatusRunning, mesh.StatusCompleted} {
						e, err := kv.Get(ctx, qm.TaskRunID)
						if err != nil {
							return
						}
						var run mesh.TaskRun
						_ = json.Unmarshal(e.Value(), &run)
						run.Status = status
						body, _ := json.Marshal(run)
						if _, err := kv.Update(ctx, run.ID, body, e.Revision()); err != nil {
							return
						}
						_, _ = js.Publish(ctx, bus.EventSubject(agent, "task_run", run.ID), body)
						if status == mesh.StatusRunning {
							_ = msg.DoubleAck(ctx)
							if t, ok := created.LoadAndDelete(run.ID); ok {
								claimLat.add(time.Since(t.(time.Time)))
							}
						}
					}
					done.Add(1)
					<-slots
				}
			}
		}()
	}
	start := time.Now()
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds(), claimLat.summary(), nil
}
