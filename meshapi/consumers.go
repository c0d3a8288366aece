package meshapi

import (
	"context"
	"net/http"
	"time"

	"github.com/a2amesh/a2amesh/bus"
)

// Event consumer credential operations (service "credentials", which answers the
// NATS auth callout and so decides what a credential may read).
const (
	OpConsumerCreate = "consumer_create"
	OpConsumerList   = "consumer_list"
	OpConsumerDelete = "consumer_delete"
)

// CreateConsumerRequest asks for a NATS credential that may read events.
type CreateConsumerRequest struct {
	// Name labels the credential for people (e.g. "billing").
	Name string `json:"name"`
	// AgentID confines the credential to one agent's events; empty allows
	// every agent's.
	AgentID string `json:"agent_id,omitempty"`
	// Types narrows the credential to the kinds of these event types (the
	// subject carries the kind, so the server enforces kinds; a consumer
	// filters the types within a kind on the ce-type header). Empty allows
	// every kind.
	Types []string `json:"types,omitempty"`
}

// Consumer is an event consumer credential as listed: never the credential.
type Consumer struct {
	ConsumerID string   `json:"consumer_id"`
	Name       string   `json:"name"`
	AgentID    string   `json:"agent_id,omitempty"`
	Types      []string `json:"types,omitempty"`
	// Subjects are the event subjects the credential may subscribe to when
	// it connects as LiveUser; its durable consumer is filtered to them.
	Subjects []string `json:"subjects"`
	// LiveUser is the NATS user name with which the credential, as the
	// password, follows its subjects live (core NATS subscriptions). As a
	// token it reads its durable consumer instead.
	LiveUser string `json:"live_user"`
	// DurableName is its durable pull consumer on Stream, made by the
	// platform with the credential, from the start of the retention window.
	DurableName string `json:"durable_name"`
	// JSAPIPrefix is the JetStream API prefix its connections use to read
	// that consumer (jetstream.NewWithAPIPrefix, nats --js-api-prefix).
	JSAPIPrefix string `json:"js_api_prefix"`
	// InboxPrefix is the reply-inbox prefix its connections must use for
	// JetStream API calls (nats --inbox-prefix).
	InboxPrefix string `json:"inbox_prefix"`
	Stream      string `json:"stream"`
	// Streams, for a credential of every agent's events in a deployment of
	// several regions, are the event streams of each region (those running
	// services, and those that joined since) on which it has a durable
	// consumer of the same DurableName (for a credential of one agent that
	// moved home, the stream it was made on and its new home's):
	// reading each region's events where they are stored first goes on
	// with the regions that are up while another is down, the origin
	// included. The origin's stream (SkipSourced) is Stream itself, which
	// also holds copies of the other regions' events: a reader of Streams
	// skips there the messages that carry the Nats-Stream-Source header.
	// Read either Stream or Streams, not both.
	Streams   []bus.RegionStream `json:"streams,omitempty"`
	CreatedAt time.Time          `json:"created_at"`
}

// CreateConsumerResponse carries the credential, shown once.
type CreateConsumerResponse struct {
	Consumer
	// Credential authenticates a NATS connection (as its token). The
	// platform keeps only its hash.
	Credential string `json:"credential"`
	// NATSURL is where to connect ("" when the platform's NATS is not
	// reachable from outside).
	NATSURL string `json:"nats_url"`
}

// ConsumerList lists consumer credentials, oldest first.
type ConsumerList struct {
	Consumers []Consumer `json:"consumers"`
}

// ListConsumersRequest lists every consumer credential.
type ListConsumersRequest struct{}

// DeleteConsumerRequest revokes a consumer credential.
type DeleteConsumerRequest struct {
	ConsumerID string `json:"consumer_id"`
}

// The credentials service's operations on event consumer credentials,
// for their owner.
var (
	// The answer carries the credential, shown this once.
	OpConsumersCreate = define[CreateConsumerRequest, CreateConsumerResponse](OpInfo{Name: OpConsumerCreate, Service: bus.ServiceCredentials, Caller: CallerOwner,
		REST: noStore(route(http.MethodPost, "/consumers", http.StatusCreated, nil))})
	OpConsumersList = define[ListConsumersRequest, ConsumerList](OpInfo{Name: OpConsumerList, Service: bus.ServiceCredentials, Caller: CallerOwner, Idempotent: true,
		REST: get("/consumers", nil)})
	OpConsumersDelete = define[DeleteConsumerRequest, Empty](OpInfo{Name: OpConsumerDelete, Service: bus.ServiceCredentials, Caller: CallerOwner, Idempotent: true,
		REST: route(http.MethodDelete, "/consumers/{consumerId}", http.StatusNoContent, map[string]string{"consumerId": "consumer_id"})})
)

// CreateConsumer creates an event consumer credential.
func (c *Client) CreateConsumer(ctx context.Context, req CreateConsumerRequest) (*CreateConsumerResponse, error) {
	return Send(ctx, c, OpConsumersCreate, req)
}

// ListConsumers lists event consumer credentials.
func (c *Client) ListConsumers(ctx context.Context) (*ConsumerList, error) {
	return Send(ctx, c, OpConsumersList, ListConsumersRequest{})
}

// DeleteConsumer revokes an event consumer credential.
func (c *Client) DeleteConsumer(ctx context.Context, consumerID string) error {
	_, err := Send(ctx, c, OpConsumersDelete, DeleteConsumerRequest{ConsumerID: consumerID})
	return err
}
