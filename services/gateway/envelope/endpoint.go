// Package envelope is the gateway's envelope endpoint (seed 002): POST /a2a
// with the a2a / context / payload blocks, whose methods are execute-agent
// (run a task on an agent and answer its output) and status (is the agent
// ready, busy or in error), and the two internal routes GET
// /api/agents/status and GET /api/executions, over the same task runs as
// every other endpoint. Callers authenticate as at the A2A endpoint; what agents a
// caller reaches is the A2A endpoint's rule. docs/a2a.md "Envelope protocol"
// tells the whole story.
package envelope

import (
	"cmp"
	"context"
	"net/http"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
	"github.com/a2amesh/a2amesh/services/gateway/endpoint"
)

// Config configures the envelope endpoint. Zero values take the documented
// defaults.
type Config struct {
	// Version is the agents' version in status answers. Default mesh.DefaultVersion.
	Version string
	// ExecuteWait bounds how long execute-agent waits for its task; past
	// it the answer is 202 with the execution still running. Default 60s.
	ExecuteWait time.Duration
	// MaxBodyBytes bounds a request body. Default mesh.MaxInputBytes: what
	// a body carries becomes a run's input.
	MaxBodyBytes int64

	// Set by the gateway.
	endpoint.Wiring
	// WriteError answers the internal routes in the platform's error shape.
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
}

func (c *Config) defaults() {
	c.Version = cmp.Or(c.Version, mesh.DefaultVersion)
	c.ExecuteWait = cmp.Or(c.ExecuteWait, mesh.DefaultBlockingWait)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, mesh.MaxInputBytes)
}

// Endpoint is the envelope endpoint.
type Endpoint struct {
	cfg           Config
	conversations *admission.Conversations
}

// New returns an endpoint; Start readies it.
func New(cfg Config) *Endpoint {
	cfg.defaults()
	return &Endpoint{cfg: cfg}
}

// Start opens the endpoint's bucket.
func (d *Endpoint) Start(ctx context.Context) error {
	var err error
	d.conversations, err = admission.OpenConversations(ctx, d.cfg.JS, d.cfg.Client, d.cfg.Homes)
	return err
}

// Route is one route of the endpoint, in ServeMux syntax.
type Route = endpoint.Route[*Endpoint]

// Routes lists the endpoint's routes.
func Routes() []Route {
	return []Route{
		{Pattern: "POST /a2a", Handler: (*Endpoint).serveEnvelope},
		{Pattern: "GET /api/agents/status", Handler: (*Endpoint).agentsStatus},
		{Pattern: "GET /api/executions", Handler: (*Endpoint).executions},
	}
}
