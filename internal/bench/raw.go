package bench

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
)

// rawCycle performs, directly against JetStream, the operations one task-run
// cycle of the service layer performs (create: record create, created
// event; claim: record read + compare-and-set, claimed event;
// complete: record read + compare-and-set, completed event), with the same
// concurrency, so the service layer's overhead is a ratio. A created run
// reaches its claimer over a Go channel, where the services offer it from
// their view of the runs bucket.
func rawCycle(ctx context.Context, conn *bus.Conn, agents int, window time.Duration) (cycleResult, error) {
	js := conn.JS
	kv, err := js.KeyValue(ctx, bus.BucketRuns)
	if err != nil {
		return cycleResult{}, err
	}
	var done atomic.Int64
	claimLat := &latencies{}
	created := sync.Map{}
	wctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	var wg sync.WaitGroup
	for a := 0; a < agents; a++ {
		agent := mesh.NewID()
		slots := make(chan struct{}, 2)
		pending := make(chan string, 2)
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
				if _, err := kv.Create(ctx, run.ID, body); err != nil {
					return
				}
				created.Store(run.ID, time.Now())
				_, _ = js.Publish(ctx, bus.RegionEventSubject(bus.DefaultRegion, agent, "task_run", run.ID), body)
				pending <- run.ID
			}
		}()
		go func() { // consumer: claim and complete
			defer wg.Done()
			for wctx.Err() == nil {
				var id string
				select {
				case id = <-pending:
				case <-wctx.Done():
					return
				}
				{
					for _, status := range []mesh.Status{mesh.StatusRunning, mesh.StatusCompleted} {
						e, err := kv.Get(ctx, id)
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
						_, _ = js.Publish(ctx, bus.RegionEventSubject(bus.DefaultRegion, agent, "task_run", run.ID), body)
						if status == mesh.StatusRunning {
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
	start, cpu := time.Now(), cpuTime(os.Getpid())
	wg.Wait()
	return newCycleResult(done.Load(), start, cpu, claimLat), nil
}
