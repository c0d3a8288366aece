package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// runtimeIdentity is an attached runtime the bench drives.
type runtimeIdentity struct {
	agentID, runtimeID, token, inbox string
}

// attachRuntimes creates n agents, each with an attached, online runtime.
func attachRuntimes(ctx context.Context, tg target, n int) ([]runtimeIdentity, error) {
	c := meshapi.NewClient(tg.conn.NC)
	out := make([]runtimeIdentity, 0, n)
	for i := 0; i < n; i++ {
		a, err := c.CreateAgent(ctx, meshapi.CreateAgentRequest{Name: fmt.Sprintf("bench-%d", i), HomeRegion: tg.home})
		if err != nil {
			return nil, err
		}
		code, err := c.IssuePairingCode(ctx, meshapi.IssuePairingCodeRequest{AgentID: a.ID})
		if err != nil {
			return nil, err
		}
		att, err := c.Attach(ctx, meshapi.AttachRequest{PairingToken: code.PairingToken, DeviceName: "bench"})
		if err != nil {
			return nil, err
		}
		out = append(out, runtimeIdentity{agentID: att.AgentID, runtimeID: att.RuntimeID, token: att.RuntimeToken, inbox: att.NATS.InboxPrefix})
	}
	return out, nil
}

// dialRuntime connects a runtime over TCP NATS, as a2a-runtime does, and
// announces it online.
func dialRuntime(ctx context.Context, tg target, id runtimeIdentity) (runtimeengine.Transport, error) {
	// A runtime paired in another region is known to this region's copies
	// of the credentials and runtimes a gateway crossing later: until
	// then its server refuses it, or its services do not know it yet.
	deadline := time.Now().Add(10 * time.Second)
	for {
		t, err := dialOnline(ctx, tg, id)
		if err == nil || time.Now().After(deadline) {
			return t, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func dialOnline(ctx context.Context, tg target, id runtimeIdentity) (runtimeengine.Transport, error) {
	t, _, err := runtimeengine.DialNATS(ctx, runtimeengine.NATSConfig{
		URL: tg.natsURL, Token: id.token, AgentID: id.agentID, RuntimeID: id.runtimeID, InboxPrefix: id.inbox, ClaimWait: 2 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	if err := t.Heartbeat(ctx, meshapi.HeartbeatRequest{}); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// serviceCycle drives create -> claim -> complete through the services on the
// bus: creates over the target's service connection, claims and completes over
// each runtime's NATS connection, with the same concurrency as rawCycle.
func serviceCycle(ctx context.Context, tg target, ids []runtimeIdentity, window time.Duration) (cycleResult, error) {
	client := meshapi.NewClient(tg.conn.NC)
	var done atomic.Int64
	claimLat := &latencies{}
	created := sync.Map{}
	wctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(ids))
	for _, id := range ids {
		t, err := dialRuntime(ctx, tg, id)
		if err != nil {
			return cycleResult{}, err
		}
		defer t.Close()
		slots := make(chan struct{}, 2)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for wctx.Err() == nil {
				select {
				case slots <- struct{}{}:
				case <-wctx.Done():
					return
				}
				// Keyed by a value chosen before the call: the claim may
				// come back before the create reply does.
				key := mesh.NewID()
				created.Store(key, time.Now())
				if _, err := client.CreateTaskRun(ctx, meshapi.CreateTaskRunRequest{TargetAgentID: id.agentID, Input: textInput(key)}); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for wctx.Err() == nil {
				run, err := claimOne(wctx, t)
				if err != nil || run == nil {
					continue
				}
				if v, ok := created.LoadAndDelete(run.InputText()); ok {
					claimLat.add(time.Since(v.(time.Time)))
				}
				if err := t.Complete(ctx, meshapi.CompleteRequest{TaskRunID: run.ID, Attempt: run.Attempt, Output: json.RawMessage(`{"text":"bench"}`)}); err != nil {
					errs <- err
					return
				}
				done.Add(1)
				<-slots
			}
		}()
	}
	start, cpu := time.Now(), cpuTime(os.Getpid())
	wg.Wait()
	close(errs)
	for err := range errs {
		return cycleResult{}, err
	}
	return newCycleResult(done.Load(), start, cpu, claimLat), nil
}

// cycleResult is what a cycle measured.
type cycleResult struct {
	rps   float64
	claim Summary
	// cpuPerRunUs is the CPU time this process (the platform with its NATS
	// server, the runtimes' clients and the driver) spent per run.
	cpuPerRunUs float64
}

// newCycleResult is the result of runs done since start, when this
// process had used cpu.
func newCycleResult(runs int64, start time.Time, cpu time.Duration, claims *latencies) cycleResult {
	return cycleResult{rps: float64(runs) / time.Since(start).Seconds(), claim: claims.summary(), cpuPerRunUs: usPer(cpuTime(os.Getpid())-cpu, runs)}
}

// claimOne waits for a pending run and claims it, as a runtime with one
// free slot does; nil when the wait ended with nothing to claim.
func claimOne(ctx context.Context, t runtimeengine.Transport) (*mesh.TaskRun, error) {
	runs, err := t.NextUpTo(ctx, 1)
	if len(runs) == 0 {
		return nil, err
	}
	return runs[0], err
}
