package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// TestWeb_WebhooksAndConsumers creates a webhook and a consumer credential
// from the page (each secret shown once), follows a failed delivery and
// retries it, and deletes both.
func TestWeb_WebhooksAndConsumers(t *testing.T) {
	// Retries are an hour apart, so the delivery waits for the page's retry.
	p := meshtest.StartPlatform(t, func(c *platform.Config) {
		c.AllowPrivateWebhooks = true
		c.WebhookRetryMin = time.Hour
		c.WebhookRetryMax = time.Hour
	})
	var accept atomic.Bool
	var hits atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		if !accept.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer receiver.Close()
	agent := p.CreateAgent("Hooked")

	b := newBrowser(t)
	b.signIn(p)
	b.click(`nav a[href="/integrations"]`)
	b.waitText("main h1", "Integrations")
	b.waitText("#webhooks", "No webhooks yet")
	b.checkA11y("the integrations page")

	// A webhook for one agent's new tasks.
	b.typeInto("#webhook-form input[name=url]", receiver.URL+"/events")
	b.setSelect("#webhook-form select[name=agent_id]", agent.ID)
	b.click(`#webhook-form input[type=checkbox][value="task_run.created"]`)
	b.click("#webhook-form button[type=submit]")
	b.waitJS("the secret shown once", `() => (document.querySelector('#webhook-secret')?.textContent || '').length >= 16`)
	secret := b.textOf("#webhook-secret")
	b.waitText("#webhooks .cards", receiver.URL+"/events")
	card := b.textOf("#webhooks .cards")
	if !strings.Contains(card, secret[len(secret)-4:]) || strings.Contains(card, secret) || !strings.Contains(card, "Hooked") || !strings.Contains(card, "task_run.created") {
		t.Fatalf("the webhook's card shows:\n%s", card)
	}
	b.shot("webhook created, secret shown once")

	// A task makes an event the receiver refuses: the delivery is listed.
	p.CreateTask(agent.ID, "an event for the webhook")
	webhookID := js[string](b, `document.querySelector('#webhooks .cards li').dataset.webhookId`)
	meshtest.Eventually(t, waitStart, func() bool {
		var dl struct {
			Deliveries []struct {
				AttemptCount int `json:"attempt_count"`
			} `json:"deliveries"`
		}
		p.Do(http.MethodGet, "/webhooks/"+webhookID+"/deliveries", nil, &dl)
		return len(dl.Deliveries) == 1 && dl.Deliveries[0].AttemptCount == 1
	}, func() string {
		return fmt.Sprintf("no failed delivery recorded; the receiver was called %d times", hits.Load())
	})
	b.click(`#webhooks button[aria-controls^="deliveries-"]`)
	b.waitText("#webhooks .deliveries", "task_run.created")
	b.waitText("#webhooks .deliveries .badge", "Retrying")
	b.waitText("#webhooks .deliveries", "HTTP 503")
	b.shot("failed delivery listed")

	// Retried from the page once the receiver accepts.
	accept.Store(true)
	b.click("#webhooks .deliveries button")
	b.waitText("#webhooks .deliveries .badge", "Delivered")
	b.waitText("#webhooks .deliveries", "2 attempts")
	b.shot("delivery retried")

	// A consumer credential.
	b.typeInto("#consumer-form input[name=name]", "analytics")
	b.click("#consumer-form button[type=submit]")
	b.waitJS("the credential shown once", `() => (document.querySelector('#consumer-credential')?.textContent || '').startsWith('a2acon_')`)
	credential := b.textOf("#consumer-credential")
	b.waitText("#consumers .cards", "analytics")
	if strings.Contains(b.textOf("#consumers .cards"), credential) {
		t.Fatal("the credential is shown in the list")
	}
	b.shot("consumer created, credential shown once")
	b.checkA11y("the integrations page with a webhook and a consumer")

	// Deleting asks twice, then both are gone on the platform too.
	b.click("#consumers .cards button.danger")
	b.waitText("#consumers .cards button.danger", "Click again")
	b.click("#consumers .cards button.danger")
	b.waitText("#consumers .cards", "No consumer credentials yet")
	b.click("#webhooks .cards button.danger")
	b.click("#webhooks .cards button.danger")
	b.waitText("#webhooks .cards", "No webhooks yet")
	b.shot("both deleted")
	var lists struct {
		Webhooks  []any `json:"webhooks"`
		Consumers []any `json:"consumers"`
	}
	p.Do(http.MethodGet, "/webhooks", nil, &lists)
	p.Do(http.MethodGet, "/consumers", nil, &lists)
	if len(lists.Webhooks) != 0 || len(lists.Consumers) != 0 {
		t.Fatalf("after deleting: %d webhooks, %d consumers", len(lists.Webhooks), len(lists.Consumers))
	}
}
