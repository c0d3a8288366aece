package edge

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestRegionOutage_AnotherRegionThanTheOrigin takes down, one after the
// other, each region that is not the origin (TestRegionOutage takes down
// the origin). While a region is down, the other two stay ready as the
// Helm chart's probes ask; one of them creates and completes 200 runs of
// its agent, whose every event reaches a webhook and a consumer credential
// made there, creates a new agent and an A2A API key, and refuses a task
// for the down region's agent with 503 and Retry-After. Once the region is
// back, every run ended once and every event was given to each subscriber
// once.
func TestRegionOutage_AnotherRegionThanTheOrigin(t *testing.T) {
	d := startRegions(t, "east", "west", "south")
	endpoint := d.startAdapter()
	for _, c := range []struct{ down, up string }{{"south", "west"}, {"west", "south"}} {
		t.Run(c.down+" down", func(t *testing.T) { outageOf(t, d, endpoint, c.down, c.up) })
	}
}

// outageOf stops region down's servers and checks that region up serves
// its own agents meanwhile (see TestRegionOutage_AnotherRegionThanTheOrigin).
func outageOf(t *testing.T, d *deployment, endpoint, down, up string) {
	p := d.regions[up].p
	agent := d.createAgent(up, "works in "+up, up)
	absent := d.createAgent(up, "works in "+down, down)
	// The agent's record is owned by its home region: the region up reads
	// it from its copy once copied, which a region back from the previous
	// case's outage may take a while to do (the servers retry a source with
	// a growing backoff).
	_, js := d.sc.Connect(up, 0)
	meshtest.Eventually(t, 90*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		copied, err := js.KeyValue(ctx, bus.RegionBucket(bus.BucketAgents, up))
		if err != nil {
			return false
		}
		_, err = copied.Get(ctx, absent.ID)
		return err == nil
	}, func() string { return up + "'s copy of the agents never held the agent homed in " + down })
	m := d.pair(agent, up, endpoint)
	rt := m.start("--transport", "nats")
	m.waitConnected(rt, "nats", up)
	m.completes(up, "before "+down+" goes down")

	hook, hookURL := webhookReceiver(t)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/webhooks", Owner: true,
		JSON: map[string]any{"url": hookURL, "agent_id": agent.ID}}).Expect(t, http.StatusCreated)
	var con meshapi.CreateConsumerResponse
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/consumers", Owner: true,
		JSON: map[string]any{"name": up + " events", "agent_id": agent.ID}}).Expect(t, http.StatusCreated).Decode(t, &con)
	read := readConsumer(t, con)

	d.sc.Stop(down)
	back := false
	defer func() {
		// The next case starts with every region up.
		if !back {
			d.sc.Start(down)
			d.sc.WaitJetStream()
		}
	}()
	for name, r := range d.regions {
		if name != down {
			r.waitReady(t, down)
		}
	}

	// A task for the down region's agent is refused, with Retry-After and
	// the region named, the first one once the region is found silent.
	var refused time.Duration
	for i := range 3 {
		res := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs", Owner: true, Timeout: 30 * time.Second,
			Header: http.Header{"Idempotency-Key": {fmt.Sprintf("for-%s-%d", down, i)}},
			JSON:   map[string]any{"target_agent_id": absent.ID, "input": map[string]any{"text": "while its region is down"}}})
		res.ExpectError(t, http.StatusServiceUnavailable, mesh.CodeUnavailable)
		if res.Header.Get("Retry-After") == "" || !strings.Contains(string(res.Body), "region "+down+" cannot be reached") {
			t.Fatalf("task %d for a %s agent with %s down: Retry-After %q, %s; want Retry-After and the region named", i, down, down, res.Header.Get("Retry-After"), res.Body)
		}
		refused = max(refused, res.Elapsed)
	}
	t.Logf("a task for a %s agent, created in %s with %s down, was refused within %s", down, up, down, refused)

	// Global records are written meanwhile: a new agent, and an API key.
	fresh := d.createAgent(up, "made while "+down+" is down", up)
	var key struct {
		APIKey string `json:"api_key"`
	}
	p.Do(http.MethodPost, "/a2a/"+fresh.ID+"/api-keys", map[string]any{"name": "outage"}, &key)
	if !strings.HasPrefix(key.APIKey, secret.PrefixAPIKey) {
		t.Fatalf("API key made while %s is down: %q", down, key.APIKey)
	}

	var runs []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run := p.CreateTask(agent.ID, fmt.Sprintf("while %s is down %d", down, i))
			mu.Lock()
			runs = append(runs, run.ID)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, id := range runs {
		if got := p.WaitTask(id, 120*time.Second, meshtest.StatusIs(mesh.StatusCompleted, mesh.StatusFailed)); got.Status != mesh.StatusCompleted {
			t.Fatalf("run %s ended %s with %s down: %+v", id, got.Status, down, got.Error)
		}
	}
	hook.waitCompletions(t, "the webhook, with "+down+" down,", runs, 60*time.Second)
	read.waitCompletions(t, "the consumer credential, with "+down+" down,", runs, 60*time.Second)

	d.sc.Start(down)
	d.sc.WaitJetStream()
	back = true
	d.regions[up].waitReady(t)
	for _, id := range runs {
		got := p.GetTask(id)
		if got.Status != mesh.StatusCompleted || got.Attempt != 1 {
			t.Fatalf("run %s after %s came back: %s, attempt %d", id, down, got.Status, got.Attempt)
		}
	}
	for who, r := range map[string]*received{"webhook": hook, "consumer credential": read} {
		if again := r.repeated(); len(again) > 0 {
			t.Fatalf("the %s received %d events more than once: %v", who, len(again), again)
		}
	}
}

// waitReady waits until every process of the region, and its gateway's API
// address, answers /readyz with 200, naming no unreachable region but
// those of allowed: a process names a down region once a request of its
// own found it silent, or once its copies from that region fell silent.
func (r *region) waitReady(t *testing.T, allowed ...string) {
	t.Helper()
	addrs := map[string]string{"the gateway's API": strings.TrimPrefix(r.api, "http://")}
	for svc, addr := range r.health {
		addrs[svc] = addr
	}
	for name, addr := range addrs {
		var status int
		var got readiness
		meshtest.Eventually(t, 30*time.Second, func() bool {
			status, got = probeReady(addr)
			return status == http.StatusOK && !slices.ContainsFunc(got.UnreachableRegions, func(u string) bool { return !slices.Contains(allowed, u) })
		}, func() string {
			return fmt.Sprintf("%s in %s: /readyz %d %+v; want 200 naming none but %v unreachable", name, r.name, status, got, allowed)
		})
	}
}
