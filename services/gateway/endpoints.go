package gateway

import (
	"context"
	"net/http"

	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/envelope"
	"github.com/a2amesh/a2amesh/services/gateway/partner"
)

// Delegation and the older A2A endpoints. The routing rules, delegation traces
// and partner registry are people routes over the delegation service; the
// partner routes of seed 003 (partner package) and the envelope protocol of
// seed 002 (envelope package) are endpoints of their own, mounted at /a2a and
// /a2a/<word>, which the A2A endpoint leaves to them (a2a.go).

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
	pc := g.cfg.Endpoints.Partner
	pc.Client, pc.JS, pc.Runs, pc.Homes, pc.A2A, pc.Admission, pc.PublicURL, pc.Closing = g.client, g.js, g.runs, g.homes, g.a2a, g.admission, g.publicURL, g.closing
	pc.Logger = g.log.With().Str("endpoint", "partner").Logger()
	if pc.CardVersion == "" {
		pc.CardVersion = g.cfg.A2A.Version
	}
	if pc.BlockingWait == 0 {
		pc.BlockingWait = g.cfg.A2A.BlockingWait
	}
	ec := g.cfg.Endpoints.Envelope
	ec.Client, ec.JS, ec.Runs, ec.Homes, ec.A2A, ec.Admission, ec.WriteError = g.client, g.js, g.runs, g.homes, g.a2a, g.admission, g.writeError
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

// endpointRoutes registers delegation's people routes and the older endpoints.
func (g *Gateway) endpointRoutes(mux *http.ServeMux) {
	g.people(mux, "POST /agent-accounts/{agentId}/routing-rules", g.createRoutingRule)
	g.people(mux, "GET /agent-accounts/{agentId}/routing-rules", g.listRoutingRules)
	g.people(mux, "DELETE /agent-accounts/{agentId}/routing-rules/{ruleId}", g.deleteRoutingRule)
	g.people(mux, "GET /task-runs/{taskRunId}/trace", g.traceTaskRun)
	g.people(mux, "POST /a2a/partners", g.createPartner)
	g.people(mux, "GET /a2a/partners", g.listPartners)
	g.people(mux, "DELETE /a2a/partners/{partnerId}", g.deletePartner)
	for _, rt := range partner.Routes() {
		g.handle(mux, rt.Pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g.endpoints.partner.Serve(rt, w, r)
		}))
	}
	for _, rt := range envelope.Routes() {
		g.handle(mux, rt.Pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g.endpoints.envelope.Serve(rt, w, r)
		}))
	}
}

// routingRuleRequest is the body of POST /agent-accounts/{id}/routing-rules.
type routingRuleRequest struct {
	Name     string             `json:"name,omitempty"`
	Match    meshapi.RuleMatch  `json:"match"`
	Priority int                `json:"priority"`
	Target   meshapi.RuleTarget `json:"target"`
}

func (g *Gateway) createRoutingRule(w http.ResponseWriter, r *http.Request) {
	var in routingRuleRequest
	if err := decodeBody(w, r, g.cfg.MaxBodyBytes, strict, &in); err != nil {
		g.writeError(w, r, err)
		return
	}
	rule, err := g.client.CreateRoutingRule(r.Context(), meshapi.CreateRoutingRuleRequest{
		AgentID: r.PathValue("agentId"), Name: in.Name, Match: in.Match, Priority: in.Priority, Target: in.Target,
	})
	g.reply(w, r, http.StatusCreated, rule, err)
}

func (g *Gateway) listRoutingRules(w http.ResponseWriter, r *http.Request) {
	l, err := g.client.ListRoutingRules(r.Context(), r.PathValue("agentId"))
	g.reply(w, r, http.StatusOK, l, err)
}

func (g *Gateway) deleteRoutingRule(w http.ResponseWriter, r *http.Request) {
	err := g.client.DeleteRoutingRule(r.Context(), meshapi.DeleteRoutingRuleRequest{AgentID: r.PathValue("agentId"), RuleID: r.PathValue("ruleId")})
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (g *Gateway) traceTaskRun(w http.ResponseWriter, r *http.Request) {
	n, err := g.client.TraceDelegation(r.Context(), r.PathValue("taskRunId"))
	g.reply(w, r, http.StatusOK, n, err)
}

func (g *Gateway) createPartner(w http.ResponseWriter, r *http.Request) {
	var in meshapi.CreatePartnerRequest
	if err := decodeBody(w, r, g.cfg.MaxBodyBytes, strict, &in); err != nil {
		g.writeError(w, r, err)
		return
	}
	p, err := g.client.CreatePartner(r.Context(), in)
	if err == nil {
		// The shared secret is shown this once.
		w.Header().Set("Cache-Control", "no-store")
	}
	g.reply(w, r, http.StatusCreated, p, err)
}

func (g *Gateway) listPartners(w http.ResponseWriter, r *http.Request) {
	l, err := g.client.ListPartners(r.Context())
	g.reply(w, r, http.StatusOK, l, err)
}

func (g *Gateway) deletePartner(w http.ResponseWriter, r *http.Request) {
	if err := g.client.DeletePartner(r.Context(), r.PathValue("partnerId")); err != nil {
		g.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
