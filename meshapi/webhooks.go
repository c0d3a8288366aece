package meshapi

import (
	"context"
	"net/http"
	"time"

	"github.com/a2amesh/a2amesh/bus"
)

// Webhook operations (service "webhooks").
const (
	OpWebhookCreate     = "create"
	OpWebhookList       = "list"
	OpWebhookGet        = "get"
	OpWebhookDelete     = "delete"
	OpWebhookDeliveries = "deliveries"
	OpWebhookRedrive    = "redrive"
)

// Webhook delivery formats.
const (
	// WebhookFormatCloudEvents posts each event as a structured CloudEvent
	// (the default).
	WebhookFormatCloudEvents = "cloudevents"
	// WebhookFormatA2A posts A2A 1.0 push notifications: a StreamResponse
	// holding the task, with Authorization: <scheme> <credentials>.
	WebhookFormatA2A = "a2a"
	// WebhookFormatA2AV03 posts A2A 0.3 push notifications: the task, with
	// X-A2A-Notification-Token.
	WebhookFormatA2AV03 = "a2a-0.3"
)

// CreateWebhookRequest subscribes an HTTP endpoint to events.
type CreateWebhookRequest struct {
	// URL receives the deliveries (http or https).
	URL string `json:"url"`
	// Secret signs every delivery. At least 16 bytes; empty generates one,
	// returned once in the answer.
	Secret string `json:"secret,omitempty"`
	// AgentID, TaskRunID and Types narrow what is delivered, like the
	// filters of GET /events.
	AgentID   string   `json:"agent_id,omitempty"`
	TaskRunID string   `json:"task_run_id,omitempty"`
	Types     []string `json:"types,omitempty"`
	// Format is how events are posted (default cloudevents). The A2A formats
	// need TaskRunID: they push one task's state changes.
	Format string `json:"format,omitempty"`
	// Token is sent as X-A2A-Notification-Token (A2A formats), so the
	// receiver knows the notification is for its task.
	Token string `json:"token,omitempty"`
	// AuthScheme and AuthCredentials are sent as Authorization: <scheme>
	// <credentials> (A2A 1.0 push authentication).
	AuthScheme      string `json:"auth_scheme,omitempty"`
	AuthCredentials string `json:"auth_credentials,omitempty"`
	// Since delivers the matching events stored from this time on (a push
	// configuration given with the message that created its task sees the
	// task from its start); nil delivers events stored after the answer.
	Since *time.Time `json:"since,omitempty"`
}

// Webhook is a subscription as listed: the secret only as a hint.
type Webhook struct {
	WebhookID string   `json:"webhook_id"`
	URL       string   `json:"url"`
	AgentID   string   `json:"agent_id,omitempty"`
	TaskRunID string   `json:"task_run_id,omitempty"`
	Types     []string `json:"types,omitempty"`
	Format    string   `json:"format,omitempty"`
	// SecretHint is the secret masked to its last four characters.
	SecretHint string    `json:"secret_hint"`
	CreatedAt  time.Time `json:"created_at"`
	// UnreachableRegions, on a webhook's own view in a multi-region
	// deployment, names the regions whose events it cannot deliver now
	// (their event stream does not answer); the other regions' are
	// delivered meanwhile.
	UnreachableRegions []string `json:"unreachable_regions,omitempty"`
}

// CreateWebhookResponse is the new subscription, with its secret (shown once).
type CreateWebhookResponse struct {
	Webhook
	Secret string `json:"secret"`
}

// WebhookList lists subscriptions, oldest first.
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// ListWebhooksRequest lists every subscription.
type ListWebhooksRequest struct{}

// WebhookRequest names one subscription.
type WebhookRequest struct {
	WebhookID string `json:"webhook_id"`
}

// Delivery states.
const (
	// DeliveryRetrying: at least one attempt failed; more follow with backoff.
	DeliveryRetrying = "retrying"
	// DeliveryDead: attempts failed for the whole retry window; the event is
	// dead-lettered until redriven.
	DeliveryDead = "dead"
	// DeliveryDelivered: an attempt succeeded after earlier ones failed (or a
	// redrive did).
	DeliveryDelivered = "delivered"
)

// Delivery is one event's delivery to one webhook, recorded once an
// attempt has failed: deliveries that succeed at the first attempt leave no
// record.
type Delivery struct {
	// DeliveryID is the event's position in the event stream.
	DeliveryID string `json:"delivery_id"`
	WebhookID  string `json:"webhook_id"`
	EventID    string `json:"event_id"`
	EventType  string `json:"event_type"`
	Subject    string `json:"subject"`
	State      string `json:"state"`
	// Attempts are the most recent attempts, oldest first.
	Attempts       []DeliveryAttempt `json:"attempts"`
	AttemptCount   int               `json:"attempt_count"`
	FirstAttemptAt time.Time         `json:"first_attempt_at"`
	NextAttemptAt  *time.Time        `json:"next_attempt_at,omitempty"`
	UpdatedAt      time.Time         `json:"updated_at"`
}

// DeliveryAttempt is one HTTP attempt.
type DeliveryAttempt struct {
	At         time.Time `json:"at"`
	StatusCode int       `json:"status_code,omitempty"`
	LatencyMS  float64   `json:"latency_ms"`
	Error      string    `json:"error,omitempty"`
}

// ListDeliveriesRequest lists a webhook's recorded deliveries.
type ListDeliveriesRequest struct {
	WebhookID string `json:"webhook_id"`
	// State keeps one state only (retrying, dead, delivered).
	State string `json:"state,omitempty"`
}

// DeliveryList lists deliveries, oldest event first.
type DeliveryList struct {
	Deliveries []Delivery `json:"deliveries"`
}

// RedriveRequest sends a recorded delivery again, once, now.
type RedriveRequest struct {
	WebhookID  string `json:"webhook_id"`
	DeliveryID string `json:"delivery_id"`
}

// onWebhook binds {webhookId} to the request's webhook_id.
var onWebhook = map[string]string{"webhookId": "webhook_id"}

// The webhooks service's operations: subscriptions and their deliveries,
// for their owner.
var (
	// The answer carries the signing secret, shown this once.
	OpWebhooksCreate = define[CreateWebhookRequest, CreateWebhookResponse](OpInfo{Name: OpWebhookCreate, Service: bus.ServiceWebhooks, Caller: CallerOwner,
		REST: noStore(route(http.MethodPost, "/webhooks", http.StatusCreated, nil))})
	OpWebhooksList = define[ListWebhooksRequest, WebhookList](OpInfo{Name: OpWebhookList, Service: bus.ServiceWebhooks, Caller: CallerOwner, Idempotent: true,
		REST: get("/webhooks", nil)})
	OpWebhooksGet = define[WebhookRequest, Webhook](OpInfo{Name: OpWebhookGet, Service: bus.ServiceWebhooks, Caller: CallerOwner, Idempotent: true,
		REST: get("/webhooks/{webhookId}", onWebhook)})
	OpWebhooksDelete = define[WebhookRequest, Empty](OpInfo{Name: OpWebhookDelete, Service: bus.ServiceWebhooks, Caller: CallerOwner, Idempotent: true,
		REST: route(http.MethodDelete, "/webhooks/{webhookId}", http.StatusNoContent, onWebhook)})
	OpWebhooksDeliveries = define[ListDeliveriesRequest, DeliveryList](OpInfo{Name: OpWebhookDeliveries, Service: bus.ServiceWebhooks, Caller: CallerOwner, Idempotent: true,
		REST: query(get("/webhooks/{webhookId}/deliveries", onWebhook), map[string]string{"state": "state"})})
	OpWebhooksRedrive = define[RedriveRequest, Delivery](OpInfo{Name: OpWebhookRedrive, Service: bus.ServiceWebhooks, Caller: CallerOwner,
		REST: post("/webhooks/{webhookId}/deliveries/{deliveryId}/redrive", map[string]string{"webhookId": "webhook_id", "deliveryId": "delivery_id"})})
)

// CreateWebhook subscribes an endpoint to events.
func (c *Client) CreateWebhook(ctx context.Context, req CreateWebhookRequest) (*CreateWebhookResponse, error) {
	return Send(ctx, c, OpWebhooksCreate, req)
}

// ListWebhooks lists webhook subscriptions.
func (c *Client) ListWebhooks(ctx context.Context) (*WebhookList, error) {
	return Send(ctx, c, OpWebhooksList, ListWebhooksRequest{})
}

// GetWebhook returns one subscription.
func (c *Client) GetWebhook(ctx context.Context, webhookID string) (*Webhook, error) {
	return Send(ctx, c, OpWebhooksGet, WebhookRequest{WebhookID: webhookID})
}

// DeleteWebhook removes a subscription and its pending deliveries.
func (c *Client) DeleteWebhook(ctx context.Context, webhookID string) error {
	_, err := Send(ctx, c, OpWebhooksDelete, WebhookRequest{WebhookID: webhookID})
	return err
}

// ListDeliveries lists a subscription's recorded deliveries.
func (c *Client) ListDeliveries(ctx context.Context, req ListDeliveriesRequest) (*DeliveryList, error) {
	return Send(ctx, c, OpWebhooksDeliveries, req)
}

// RedriveDelivery sends a recorded delivery again and returns it updated.
func (c *Client) RedriveDelivery(ctx context.Context, req RedriveRequest) (*Delivery, error) {
	return Send(ctx, c, OpWebhooksRedrive, req)
}
