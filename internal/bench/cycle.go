package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/internal/runtimeengine"
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
func serviceCycle(ctx context.Context, tg target, ids []runtimeIdentity, window time.Duration) (float64, Summary, error) {
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
			return 0, Summary{}, err
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
				run, err := t.Next(wctx)
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
	start := time.Now()
	wg.Wait()
	close(errs)
	for err := range errs {
		return 0, Summary{}, err
	}
	return float64(done.Load()) / time.Since(start).Seconds(), claimLat.summary(), nil
}
