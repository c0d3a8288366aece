package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/meshapi"
)

// FanoutReport is event delivery to many consumers at once while task runs
// complete: SSE subscribers (real HTTP clients of GET /events) and webhook
// endpoints (loopback receivers), each receiving every event.
type FanoutReport struct {
	Runs             int     `json:"runs"`
	Events           int     `json:"events"`
	SSESubscribers   int     `json:"sse_subscribers"`
	WebhookEndpoints int     `json:"webhook_endpoints"`
	RunsPerSec       float64 `json:"runs_per_sec"`
	SSE              Channel `json:"sse"`
	Webhooks         Channel `json:"webhooks"`
}

// Channel is one way of consuming events: latency from the event's time to
// its arrival at the consumer, and deliveries per second over all consumers.
type Channel struct {
	Latency          Summary `json:"latency"`
	DeliveriesPerSec float64 `json:"deliveries_per_sec"`
}

// fanoutReceiver counts and times what one consumer receives.
type fanoutReceiver struct {
	lat       *latencies
	completed atomic.Int64
	count     *atomic.Int64
	last      *atomic.Int64
}

func (r *fanoutReceiver) receive(body []byte) {
	var ev struct {
		Type string    `json:"type"`
		Time time.Time `json:"time"`
	}
	if json.Unmarshal(body, &ev) != nil {
		return
	}
	now := time.Now()
	r.lat.add(now.Sub(ev.Time))
	r.count.Add(1)
	r.last.Store(now.UnixNano())
	if ev.Type == "dev.a2amesh.task_run.completed" {
		r.completed.Add(1)
	}
}

// measureFanout completes runs through the services while subscribers and
// endpoints receive every event, and reports per-channel latency and throughput.
func (r *Report) measureFanout(ctx context.Context, dir string, cfg Config) error {
	p, err := startPlatform(ctx, filepath.Join(dir, "fanout"), func(c *platform.Config) { c.AllowPrivateWebhooks = true })
	if err != nil {
		return err
	}
	defer p.Stop()
	ids, err := attachRuntimes(ctx, platformTarget(p), cfg.Agents)
	if err != nil {
		return err
	}
	ownerToken, err := platform.ReadOwnerToken(platform.OwnerTokenPath(filepath.Join(dir, "fanout")))
	if err != nil {
		return err
	}
	base := "http://" + p.HTTPAddr()
	sctx, stop := context.WithCancel(ctx)
	defer stop()

	var sseCount, sseLast, hookCount, hookLast atomic.Int64
	sseLat, hookLat := &latencies{}, &latencies{}
	var subs []*fanoutReceiver
	var wg sync.WaitGroup
	connected := make(chan error, cfg.FanoutSubscribers)
	for i := 0; i < cfg.FanoutSubscribers; i++ {
		rc := &fanoutReceiver{lat: sseLat, count: &sseCount, last: &sseLast}
		subs = append(subs, rc)
		wg.Add(1)
		go func() {
			defer wg.Done()
			followSSE(sctx, base, ownerToken, rc, connected)
		}()
	}
	for range cfg.FanoutSubscribers {
		if err := <-connected; err != nil {
			return fmt.Errorf("sse subscriber: %w", err)
		}
	}
	var hooks []*fanoutReceiver
	client := meshapi.NewClient(p.Conn().NC)
	for i := 0; i < cfg.FanoutWebhooks; i++ {
		rc := &fanoutReceiver{lat: hookLat, count: &hookCount, last: &hookLast}
		hooks = append(hooks, rc)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			body, _ := io.ReadAll(req.Body)
			rc.receive(body)
		}))
		defer srv.Close()
		if _, err := client.CreateWebhook(ctx, meshapi.CreateWebhookRequest{URL: srv.URL}); err != nil {
			return fmt.Errorf("webhook: %w", err)
		}
	}

	start := time.Now()
	if err := completeRuns(ctx, p, ids, cfg.FanoutRuns); err != nil {
		return err
	}
	ranFor := time.Since(start)
	all := append(append([]*fanoutReceiver(nil), subs...), hooks...)
	deadline := time.Now().Add(5 * time.Minute)
	for _, rc := range all {
		for rc.completed.Load() < int64(cfg.FanoutRuns) {
			if time.Now().After(deadline) {
				return fmt.Errorf("consumers did not receive every completion within 5 minutes")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	stop()
	wg.Wait()
	events := int(sseCount.Load()) / max(cfg.FanoutSubscribers, 1)
	r.Fanout = &FanoutReport{
		Runs: cfg.FanoutRuns, Events: events, SSESubscribers: cfg.FanoutSubscribers, WebhookEndpoints: cfg.FanoutWebhooks,
		RunsPerSec: float64(cfg.FanoutRuns) / ranFor.Seconds(),
		SSE:        Channel{Latency: sseLat.summary(), DeliveriesPerSec: rate(sseCount.Load(), start, sseLast.Load())},
		Webhooks:   Channel{Latency: hookLat.summary(), DeliveriesPerSec: rate(hookCount.Load(), start, hookLast.Load())},
	}
	return nil
}

func rate(n int64, start time.Time, lastNano int64) float64 {
	d := time.Unix(0, lastNano).Sub(start).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(n) / d
}

// followSSE reads GET /events until ctx ends, reporting on connected once
// the server said the stream is up.
func followSSE(ctx context.Context, base, token string, rc *fanoutReceiver, connected chan<- error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		connected <- err
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		connected <- fmt.Errorf("GET /events: HTTP %d", resp.StatusCode)
		return
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	signalled := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == ": connected" && !signalled:
			signalled = true
			connected <- nil
		case strings.HasPrefix(line, "data: "):
			rc.receive([]byte(line[len("data: "):]))
		}
	}
	if !signalled {
		connected <- fmt.Errorf("stream ended before it connected")
	}
}

// completeRuns creates n runs spread over the runtimes and has each runtime
// claim and complete its runs over NATS, as serviceCycle does.
func completeRuns(ctx context.Context, p *platform.Platform, ids []runtimeIdentity, n int) error {
	client := meshapi.NewClient(p.Conn().NC)
	var done atomic.Int64
	errs := make(chan error, 2*len(ids))
	var wg sync.WaitGroup
	per := (n + len(ids) - 1) / len(ids)
	remaining := n
	for _, id := range ids {
		mine := min(per, remaining)
		remaining -= mine
		if mine == 0 {
			break
		}
		t, err := dialRuntime(ctx, platformTarget(p), id)
		if err != nil {
			return err
		}
		defer t.Close()
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < mine; i++ {
				if _, err := client.CreateTaskRun(ctx, meshapi.CreateTaskRunRequest{TargetAgentID: id.agentID, Input: json.RawMessage(`{"text":"fanout"}`)}); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for got := 0; got < mine; {
				wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				run, err := claimOne(wctx, t)
				cancel()
				if err != nil {
					errs <- fmt.Errorf("claim: %w", err)
					return
				}
				if run == nil {
					continue
				}
				if err := t.Complete(ctx, meshapi.CompleteRequest{TaskRunID: run.ID, Attempt: run.Attempt, Output: json.RawMessage(`{"text":"ok"}`)}); err != nil {
					errs <- err
					return
				}
				got++
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	if int(done.Load()) != n {
		return fmt.Errorf("completed %d of %d runs", done.Load(), n)
	}
	return nil
}
