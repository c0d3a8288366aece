package gateway

import (
	"context"
	"net/http"

	"github.com/a2amesh/a2amesh/services/gateway/endpoint"
	"github.com/a2amesh/a2amesh/services/gateway/envelope"
	"github.com/a2amesh/a2amesh/services/gateway/partner"
)

// The older A2A endpoints: the partner routes of seed 003 (partner package)
// and the envelope protocol of seed 002 (envelope package) are endpoints of
// their own, mounted at /a2a and /a2a/<word>, which the A2A endpoint leaves
// to them (a2a.go). Delegation's people routes (routing rules, traces, the
// partner registry) are operations of the table, served by the bridge.

// EndpointsConfig configures the older A2A endpoints.
type EndpointsConfig struct {
	// Partner configures the partner routes (card identity, base, webhook
	// and health URLs); the gateway fills in the rest.
	Partner partner.Config
	// Envelope configures the envelope protocol; the gateway fills in the rest.
	Envelope envelope.Config
}

// endpoints are the started older endpoints.
type endpoints struct {
	partner  *partner.Endpoint
	envelope *envelope.Endpoint
}

// startEndpoints readies the older endpoints over the A2A endpoint's authentication.
func (g *Gateway) startEndpoints(ctx context.Context) error {
	wiring := endpoint.Wiring{Client: g.client, JS: g.js, Runs: g.runs, Homes: g.homes, A2A: g.a2a, Admission: g.admission}
	pc := g.cfg.Endpoints.Partner
	pc.Wiring, pc.PublicURL, pc.Closing = wiring, g.publicURL, g.closing
	pc.Logger = g.log.With().Str("endpoint", "partner").Logger()
	if pc.CardVersion == "" {
		pc.CardVersion = g.cfg.A2A.Version
	}
	if pc.BlockingWait == 0 {
		pc.BlockingWait = g.cfg.A2A.BlockingWait
	}
	ec := g.cfg.Endpoints.Envelope
	ec.Wiring, ec.WriteError = wiring, g.writeError
	ec.Logger = g.log.With().Str("endpoint", "envelope").Logger()
	if ec.Version == "" {
		ec.Version = g.cfg.A2A.Version
	}
	if ec.ExecuteWait == 0 {
		ec.ExecuteWait = g.cfg.A2A.BlockingWait
	}
	g.endpoints = &endpoints{partner: partner.New(pc), envelope: envelope.New(ec)}
	if err := g.endpoints.partner.Start(ctx); err != nil {
		return err
	}
	return g.endpoints.envelope.Start(ctx)
}

// endpointRoutes registers the older endpoints. Delegation's people routes
// (routing rules, traces, partners) are operations of the table, served by
// the bridge.
func (g *Gateway) endpointRoutes(mux *http.ServeMux) {
	for _, rt := range partner.Routes() {
		g.handle(mux, rt.Pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rt.Serve(g.endpoints.partner, w, r)
		}))
	}
	for _, rt := range envelope.Routes() {
		g.handle(mux, rt.Pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rt.Serve(g.endpoints.envelope, w, r)
		}))
	}
}
