// Package partner is the gateway's partner endpoint: the platform-wide routes
// of seed 003 under /a2a/ (discovery, JSON-RPC messages, tasks, status as
// JSON or Server-Sent Events, and partners' signed callbacks), over the
// same task runs as every other endpoint. Callers authenticate as at the A2A
// endpoint (an API key, then a bearer token), each method needs its scope, and
// the A2A endpoint's rate limit applies; what agents a caller reaches is the
// A2A endpoint's rule (admission.Caller.Reaches). docs/a2a.md "Partner routes"
// tells the whole story.
package partner

import (
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/gateway/endpoint"
)

// The platform's card at GET /a2a/discovery, unless configured otherwise.
const (
	DefaultCardID   = "a2a-mesh"
	DefaultCardName = "A2A Mesh"
)

// Config configures the partner endpoint. Zero values take the documented
// defaults.
type Config struct {
	// CardID, CardName and CardVersion identify the platform's card at GET
	// /a2a/discovery. Defaults "a2a-mesh", "A2A Mesh" and the platform's
	// version.
	CardID      string
	CardName    string
	CardVersion string
	// BaseURL is the platform's base URL the card gives (A2A_BASE_URL).
	// Default: the public URL.
	BaseURL string
	// WebhookURL is where partners send callbacks (A2A_WEBHOOK_URL).
	// Default <BaseURL>/a2a/webhook.
	WebhookURL string
	// HealthURL is the platform's health check the card gives
	// (A2A_HEALTH_URL). Default <BaseURL>/healthz.
	HealthURL string
	// BlockingWait bounds a method call on /a2a/message that waits for its
	// task. Default 60s.
	BlockingWait time.Duration
	// MaxBodyBytes bounds a request body. Default mesh.MaxInputBytes: what
	// a body carries becomes a run's input.
	MaxBodyBytes int64
	// KeepAlive is the interval of keep-alive comments on status streams.
	// Default mesh.DefaultKeepAlive.
	KeepAlive time.Duration

	// Set by the gateway.
	endpoint.Wiring
	PublicURL string
	// Closing, when closed, ends status streams (the gateway is stopping).
	Closing <-chan struct{}
}

func (c *Config) defaults() {
	c.CardID = cmp.Or(c.CardID, DefaultCardID)
	c.CardName = cmp.Or(c.CardName, DefaultCardName)
	c.CardVersion = cmp.Or(c.CardVersion, mesh.DefaultVersion)
	c.BaseURL = cmp.Or(c.BaseURL, c.PublicURL)
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	c.WebhookURL = cmp.Or(c.WebhookURL, c.BaseURL+"/a2a/webhook")
	c.HealthURL = cmp.Or(c.HealthURL, c.BaseURL+"/healthz")
	c.BlockingWait = cmp.Or(c.BlockingWait, mesh.DefaultBlockingWait)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, mesh.MaxInputBytes)
	c.KeepAlive = cmp.Or(c.KeepAlive, mesh.DefaultKeepAlive)
}

// Endpoint is the partner endpoint.
type Endpoint struct {
	cfg     Config
	records *records
}

// New returns an endpoint; Start readies it.
func New(cfg Config) *Endpoint {
	cfg.defaults()
	return &Endpoint{cfg: cfg}
}

// Start opens the endpoint's bucket.
func (d *Endpoint) Start(ctx context.Context) error {
	var err error
	d.records, err = openRecords(ctx, d.cfg.JS, d.cfg.Client, d.cfg.Homes)
	return err
}

// Route is one route of the endpoint, in ServeMux syntax.
type Route = endpoint.Route[*Endpoint]

// Routes lists the endpoint's routes (seed 003 "Endpoints").
func Routes() []Route {
	return []Route{
		{Pattern: "GET /a2a/discovery", Handler: (*Endpoint).discovery},
		{Pattern: "POST /a2a/message", Handler: (*Endpoint).message},
		{Pattern: "POST /a2a/task", Handler: (*Endpoint).createTask},
		{Pattern: "GET /a2a/status", Handler: (*Endpoint).status},
		{Pattern: "POST /a2a/webhook", Handler: (*Endpoint).webhook},
	}
}
