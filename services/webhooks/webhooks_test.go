package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/webhooks"
)

// delivery is one request a receiver got.
type delivery struct {
	id, typ, subject string
	status           int
	signed           bool
}

// receiver is a loopback webhook endpoint that answers with respond(n) for
// its n-th request (1-based) and checks every signature.
type receiver struct {
	*httptest.Server
	secret  string
	mu      sync.Mutex
	got     []delivery
	respond func(n int) int
	// failFirst, when set, answers 500 to the first request of each event.
	failFirst bool
}

func newReceiver(t *testing.T, secret string, respond func(n int) int) *receiver {
	rc := &receiver{secret: secret, respond: respond}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev struct {
			ID, Type, Subject, SpecVersion string
		}
		_ = json.Unmarshal(body, &ev)
		signed := r.Header.Get("Content-Type") == webhooks.ContentType && r.Header.Get(webhooks.HeaderID) == ev.ID &&
			webhooks.Verify(rc.secret, r.Header.Get(webhooks.HeaderID), r.Header.Get(webhooks.HeaderTimestamp),
				r.Header.Get(webhooks.HeaderSignature), body, 5*time.Minute, time.Now()) == nil
		rc.mu.Lock()
		n := len(rc.got) + 1
		status := rc.respond(n)
		if rc.failFirst && !slices.ContainsFunc(rc.got, func(d delivery) bool { return d.id == ev.ID }) {
			status = http.StatusInternalServerError
		}
		rc.got = append(rc.got, delivery{id: ev.ID, typ: ev.Type, subject: ev.Subject, status: status, signed: signed})
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

// accepted returns the ids of the events the receiver answered 2xx, in order.
func (rc *receiver) accepted() []string {
	var ids []string
	for _, d := range rc.deliveries() {
		if d.status < 300 {
			ids = append(ids, d.id)
		}
	}
	return ids
}

func subscribe(t *testing.T, p *meshtest.Platform, body map[string]any) meshapi.CreateWebhookResponse {
	t.Helper()
	var w meshapi.CreateWebhookResponse
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/webhooks", Owner: true, JSON: body}).
		Expect(t, http.StatusCreated).Decode(t, &w)
	return w
}

// completeRun drives one run of agent through pull, progress and complete
// over HTTP and returns its id.
func completeRun(t *testing.T, p *meshtest.Platform, agentID, token string) string {
	t.Helper()
	run := p.CreateTask(agentID, "work")
	// A live runtime heartbeats all along; the test may have run longer
	// than the heartbeat timeout since the runtime's last one.
	p.Heartbeat(t, token)
	got := p.PullRun(t, agentID, token)
	if got.ID != run.ID {
		t.Fatalf("pulled %s, want %s", got.ID, run.ID)
	}
	p.Report(t, run.ID, "progress", token, map[string]any{"message": "half", "percent": 50}).Expect(t, http.StatusOK)
	p.Report(t, run.ID, "complete", token, map[string]any{"output": map[string]any{"text": "done"}}).Expect(t, http.StatusOK)
	return run.ID
}

// fastRetries lets webhooks reach the tests' loopback receivers and retries
// failed deliveries within a fraction of a second.
func fastRetries(c *platform.Config) {
	c.AllowPrivateWebhooks = true
	c.WebhookRetryMin = 50 * time.Millisecond
	c.WebhookRetryMax = 200 * time.Millisecond
}

// TestWebhooks_ReceiverThatFailsFirstGetsEveryEventSignedOnceItRecovers: a
// receiver answering 500 to its first attempts gets every event of the run,
// in order, each with a valid signature, once it answers 2xx; the failures
// are visible in the delivery list.
func TestWebhooks_ReceiverThatFailsFirstGetsEveryEventSignedOnceItRecovers(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, fastRetries)
	agent := p.CreateAgent("hooked")
	rt := p.OnlineRuntime(t, agent.ID)
	const failFirst = 4
	rc := newReceiver(t, "a-secret-of-sixteen-bytes", func(n int) int {
		if n <= failFirst {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	wh := subscribe(t, p, map[string]any{"url": rc.URL, "secret": rc.secret, "agent_id": agent.ID, "types": []string{"task_run.created", "task_run.progress", "task_run.completed"}})
	if wh.Secret != rc.secret || wh.SecretHint != "****ytes" {
		t.Fatalf("created webhook: secret %q hint %q", wh.Secret, wh.SecretHint)
	}

	runID := completeRun(t, p, agent.ID, rt.RuntimeToken)
	want := []string{mesh.EventTaskRunCreated, mesh.EventTaskRunProgress, mesh.EventTaskRunCompleted}
	meshtest.Eventually(t, 20*time.Second, func() bool { return len(rc.accepted()) >= len(want) },
		func() string {
			return fmt.Sprintf("receiver accepted %d events: %+v", len(rc.accepted()), rc.deliveries())
		})

	ds := rc.deliveries()
	if len(ds) < failFirst+len(want) {
		t.Fatalf("receiver got %d requests, want at least %d", len(ds), failFirst+len(want))
	}
	var okTypes []string
	for i, d := range ds {
		if !d.signed {
			t.Errorf("request %d (%s) is not correctly signed", i+1, d.typ)
		}
		if d.subject != runID {
			t.Errorf("request %d is about %s, want the run %s", i+1, d.subject, runID)
		}
		if i < failFirst && d.id != ds[0].id {
			t.Errorf("request %d is event %s while the first (%s) was still failing: one in flight at a time", i+1, d.id, ds[0].id)
		}
		if d.status < 300 {
			okTypes = append(okTypes, d.typ)
		}
	}
	if strings.Join(okTypes, ",") != strings.Join(want, ",") {
		t.Fatalf("accepted %v, want each of %v once, in order", okTypes, want)
	}

	var l meshapi.DeliveryList
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/webhooks/" + wh.WebhookID + "/deliveries", Owner: true}).
		Expect(t, http.StatusOK).Decode(t, &l)
	if len(l.Deliveries) != 1 {
		t.Fatalf("deliveries: %+v, want the one event that failed before succeeding", l.Deliveries)
	}
	d := l.Deliveries[0]
	if d.State != meshapi.DeliveryDelivered || d.AttemptCount != failFirst+1 || len(d.Attempts) != failFirst+1 || d.EventID != ds[0].id || d.EventType != mesh.EventTaskRunCreated {
		t.Fatalf("delivery record %+v, want delivered at attempt %d of %s", d, failFirst+1, ds[0].id)
	}
	for i, a := range d.Attempts {
		wantStatus, wantErr := http.StatusInternalServerError, "HTTP 500"
		if i == failFirst {
			wantStatus, wantErr = http.StatusNoContent, ""
		}
		if a.StatusCode != wantStatus || a.Error != wantErr || a.LatencyMS <= 0 {
			t.Fatalf("attempt %d: %+v, want HTTP %d with its latency", i+1, a, wantStatus)
		}
	}
	// The secret is never shown again, nor logged.
	get := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/webhooks/" + wh.WebhookID, Owner: true}).Expect(t, http.StatusOK)
	list := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/webhooks", Owner: true}).Expect(t, http.StatusOK)
	meshtest.AssertNoSecrets(t, []string{rc.secret}, map[string]string{"GET webhook": string(get.Body), "list": string(list.Body), "logs": p.Logs.String()})
	metrics := string(p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/metrics"}).Expect(t, http.StatusOK).Body)
	for _, line := range []string{
		`a2amesh_webhook_deliveries_total{result="failed"} 4`,
		`a2amesh_webhook_deliveries_total{result="delivered"} 3`,
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("metrics lack %q", line)
		}
	}
}

// TestWebhooks_PermanentFailureIsDeadLetteredAndCanBeRedriven: an endpoint
// that never succeeds within the retry window ends in the dead-letter list,
// with its attempts; a redrive once it works delivers the event.
func TestWebhooks_PermanentFailureIsDeadLetteredAndCanBeRedriven(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, fastRetries, func(c *platform.Config) { c.WebhookRetryFor = 700 * time.Millisecond })
	agent := p.CreateAgent("dead-letters")
	var healthy sync.Mutex
	broken := true
	rc := newReceiver(t, "another-secret-0123456789", func(int) int {
		healthy.Lock()
		defer healthy.Unlock()
		if broken {
			return http.StatusBadGateway
		}
		return http.StatusOK
	})
	wh := subscribe(t, p, map[string]any{"url": rc.URL, "secret": rc.secret, "agent_id": agent.ID, "types": []string{"agent.updated"}})
	p.Do(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"description": "changed"}, nil)

	var dead meshapi.DeliveryList
	meshtest.Eventually(t, 15*time.Second, func() bool {
		p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/webhooks/" + wh.WebhookID + "/deliveries?state=dead", Owner: true}).
			Expect(t, http.StatusOK).Decode(t, &dead)
		return len(dead.Deliveries) == 1
	}, func() string { return fmt.Sprintf("no dead letter; receiver got %d requests", len(rc.deliveries())) })
	d := dead.Deliveries[0]
	if d.EventType != mesh.EventAgentUpdated || d.Subject != agent.ID || d.AttemptCount < 2 || len(d.Attempts) != min(d.AttemptCount, 10) || d.NextAttemptAt != nil {
		t.Fatalf("dead letter %+v, want agent.updated with several attempts and no next one", d)
	}
	if got := len(rc.deliveries()); got != d.AttemptCount {
		t.Fatalf("receiver got %d requests, the record counts %d attempts", got, d.AttemptCount)
	}
	// Dead means no more attempts on its own. (A bounded wait, to show that
	// nothing happens.)
	time.Sleep(500 * time.Millisecond)
	if got := len(rc.deliveries()); got != d.AttemptCount {
		t.Fatalf("a dead-lettered event was tried again: %d requests, %d recorded", got, d.AttemptCount)
	}

	healthy.Lock()
	broken = false
	healthy.Unlock()
	var redriven meshapi.Delivery
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/webhooks/" + wh.WebhookID + "/deliveries/" + d.DeliveryID + "/redrive", Owner: true}).
		Expect(t, http.StatusOK).Decode(t, &redriven)
	if redriven.State != meshapi.DeliveryDelivered || redriven.AttemptCount != d.AttemptCount+1 {
		t.Fatalf("redriven %+v, want delivered after one more attempt", redriven)
	}
	if acc := rc.accepted(); len(acc) != 1 || acc[0] != d.EventID {
		t.Fatalf("receiver accepted %v, want the dead-lettered event %s", acc, d.EventID)
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/webhooks/" + wh.WebhookID + "/deliveries/999999/redrive", Owner: true}).
		ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
	metrics := string(p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/metrics"}).Expect(t, http.StatusOK).Body)
	if !strings.Contains(metrics, `a2amesh_webhook_deliveries_total{result="dead_lettered"} 1`+"\n") {
		t.Errorf("metrics do not count the dead letter")
	}
}

// TestWebhooks_AHangingEndpointDoesNotDelayAnother: each subscription has
// its own worker, so an endpoint that never answers holds up only itself.
func TestWebhooks_AHangingEndpointDoesNotDelayAnother(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, fastRetries, func(c *platform.Config) { c.WebhookAttemptTimeout = time.Minute })
	agent := p.CreateAgent("two-endpoints")
	release := make(chan struct{})
	var hung sync.WaitGroup
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hung.Add(1)
		defer hung.Done()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); hanging.Close() })
	fine := newReceiver(t, "fine-secret-0123456789ab", func(int) int { return http.StatusOK })
	subscribe(t, p, map[string]any{"url": hanging.URL, "agent_id": agent.ID})
	subscribe(t, p, map[string]any{"url": fine.URL, "secret": fine.secret, "agent_id": agent.ID})

	const runs = 5
	start := time.Now()
	for i := 0; i < runs; i++ {
		p.CreateTask(agent.ID, fmt.Sprintf("run %d", i))
	}
	meshtest.Eventually(t, 10*time.Second, func() bool { return len(fine.accepted()) == runs },
		func() string {
			return fmt.Sprintf("the healthy endpoint got %d of %d events", len(fine.accepted()), runs)
		})
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the healthy endpoint took %s for %d events while the other hung", took, runs)
	}
	for _, d := range fine.deliveries() {
		if !d.signed {
			t.Fatalf("delivery %s is not correctly signed", d.id)
		}
	}
}

// TestWebhooks_PrivateTargetsAreRefusedUnlessAllowed: without
// --allow-private-webhooks a URL reaching loopback, private or link-local
// addresses is refused at creation.
func TestWebhooks_PrivateTargetsAreRefusedUnlessAllowed(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	for _, target := range []string{
		"http://127.0.0.1:8080/hook", "http://localhost/hook", "http://[::1]/hook", "https://10.1.2.3/hook",
		"http://192.168.1.1/hook", "http://169.254.169.254/latest/meta-data", "http://0.0.0.0/", "http://[fd00::1]/",
	} {
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/webhooks", Owner: true, JSON: map[string]any{"url": target}}).
			ExpectError(t, http.StatusBadRequest, mesh.CodeTargetNotAllowed)
	}
	for _, target := range []string{"ftp://example.com/", "not a url", "http://user:pass@example.com/", "/relative"} {
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/webhooks", Owner: true, JSON: map[string]any{"url": target}}).
			ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	}
	var l meshapi.WebhookList
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/webhooks", Owner: true}).Expect(t, http.StatusOK).Decode(t, &l)
	if len(l.Webhooks) != 0 {
		t.Fatalf("refused webhooks were stored: %+v", l.Webhooks)
	}
}

// TestWebhooks_DeleteStopsDeliveries: after DELETE the endpoint gets nothing
// more and the subscription is gone.
func TestWebhooks_DeleteStopsDeliveries(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, fastRetries)
	agent := p.CreateAgent("deleted")
	rc := newReceiver(t, "deleted-secret-0123456789", func(int) int { return http.StatusOK })
	wh := subscribe(t, p, map[string]any{"url": rc.URL, "secret": rc.secret, "agent_id": agent.ID})
	if !strings.HasPrefix(wh.SecretHint, "****") || wh.URL != rc.URL {
		t.Fatalf("webhook %+v", wh)
	}
	p.CreateTask(agent.ID, "before")
	meshtest.Eventually(t, 10*time.Second, func() bool { return len(rc.accepted()) == 1 }, func() string { return "first event not delivered" })
	p.Send(t, meshtest.Request{Method: http.MethodDelete, Path: "/webhooks/" + wh.WebhookID, Owner: true}).Expect(t, http.StatusNoContent)
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/webhooks/" + wh.WebhookID, Owner: true}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
	p.Send(t, meshtest.Request{Method: http.MethodDelete, Path: "/webhooks/" + wh.WebhookID, Owner: true}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
	// A second subscription to the same agent shows when the next event has
	// been delivered: the deleted one must not have had it by then.
	control := newReceiver(t, "control-secret-0123456789", func(int) int { return http.StatusOK })
	subscribe(t, p, map[string]any{"url": control.URL, "secret": control.secret, "agent_id": agent.ID})
	p.CreateTask(agent.ID, "after")
	meshtest.Eventually(t, 10*time.Second, func() bool { return len(control.accepted()) >= 1 }, func() string { return "event after the delete not delivered to the other webhook" })
	if got := len(rc.deliveries()); got != 1 {
		t.Fatalf("receiver got %d deliveries, want only the one before the delete", got)
	}
}

// TestWebhooks_RestartResumesWhereDeliveryStopped: delivery state is on the
// bus, so events stored while the platform was down or mid-retry are
// delivered after a restart on the same data dir.
func TestWebhooks_RestartResumesWhereDeliveryStopped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var mu sync.Mutex
	failing := true
	rc := newReceiver(t, "restart-secret-0123456789", func(int) int {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	p := meshtest.StartPlatform(t, fastRetries, func(c *platform.Config) { c.DataDir = dir })
	agent := p.CreateAgent("restart")
	subscribe(t, p, map[string]any{"url": rc.URL, "secret": rc.secret, "agent_id": agent.ID, "types": []string{"task_run.created"}})
	first := p.CreateTask(agent.ID, "one")
	meshtest.Eventually(t, 10*time.Second, func() bool { return len(rc.deliveries()) >= 2 }, func() string { return "no retries before the restart" })
	p.Stop()

	mu.Lock()
	failing = false
	mu.Unlock()
	p2 := meshtest.StartPlatform(t, fastRetries, func(c *platform.Config) { c.DataDir = dir })
	second := p2.CreateTask(agent.ID, "two")
	meshtest.Eventually(t, 15*time.Second, func() bool { return len(rc.accepted()) == 2 },
		func() string { return fmt.Sprintf("after the restart the receiver accepted %v", rc.accepted()) })
	acc := rc.accepted()
	if !strings.HasPrefix(acc[0], first.ID+".") || !strings.HasPrefix(acc[1], second.ID+".") {
		t.Fatalf("accepted %v, want the run created before the restart, then the one after", acc)
	}
}

// TestWebhooks_ALostConsumerIsMadeAgainAndDeliveryGoesOn: a subscription's
// consumer deleted under it (by hand, or lost with its stream's store)
// while the subscription stands is made again, from the last event the
// worker settled, and says so in the log: the events after it are
// delivered, where the worker used to end without a word.
func TestWebhooks_ALostConsumerIsMadeAgainAndDeliveryGoesOn(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, fastRetries)
	agent := p.CreateAgent("lost")
	rc := newReceiver(t, "lost-consumer-secret-0123456789", func(int) int { return http.StatusOK })
	wh := subscribe(t, p, map[string]any{"url": rc.URL, "secret": rc.secret, "agent_id": agent.ID, "types": []string{"task_run.created"}})
	before := p.CreateTask(agent.ID, "before")
	meshtest.Eventually(t, 10*time.Second, func() bool { return len(rc.accepted()) == 1 }, func() string { return "first event not delivered" })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Conn().JS.DeleteConsumer(ctx, bus.EventStream, bus.WebhookConsumer(wh.WebhookID)); err != nil {
		t.Fatal(err)
	}
	after := p.CreateTask(agent.ID, "after")
	meshtest.Eventually(t, 20*time.Second, func() bool { return len(rc.accepted()) >= 2 },
		func() string {
			return fmt.Sprintf("after its consumer was lost the receiver accepted %v", rc.accepted())
		})
	acc := rc.accepted()
	if !strings.HasPrefix(acc[0], before.ID+".") || !strings.HasPrefix(acc[len(acc)-1], after.ID+".") {
		t.Fatalf("accepted %v, want the run before the loss first and the one after it last", acc)
	}
	if !strings.Contains(p.Logs.String(), "webhook consumer was lost") {
		t.Fatalf("the loss was not logged:\n%s", p.Logs.String())
	}
}
