package gateway

import (
	"context"
	"net/http"

	"github.com/a2amesh/a2amesh/internal/a2atoken"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/services/gateway/a2aserver"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
)

// Every agent's A2A endpoint lives in a2aserver; the gateway mounts its routes
// under /a2a/{agentId} (and the runtime's file route) and gives it the bus,
// the public URL and the owner check.

// startA2A readies admission and the A2A endpoint.
func (g *Gateway) startA2A(ctx context.Context) error {
	signer, err := a2atoken.Load(ctx, g.js)
	if err != nil {
		return err
	}
	ac := g.cfg.Admission
	ac.Client, ac.JS, ac.IsOwner, ac.Signer, ac.Logger = g.client, g.js, g.isOwnerToken, signer, g.log
	ac.AgentURL = func(agentID string) string { return a2aserver.AgentURL(g.publicURL, agentID) }
	if g.admission, err = admission.New(ctx, ac); err != nil {
		return err
	}
	cfg := g.cfg.A2A
	cfg.Client, cfg.JS, cfg.Runs, cfg.Homes = g.client, g.js, g.runs, g.homes
	cfg.Logger = g.log.With().Str("endpoint", "a2a").Logger()
	cfg.PublicURL = g.publicURL
	cfg.Admission = g.admission
	cfg.WriteError = g.writeError
	cfg.Closing = g.closing
	g.a2a = a2aserver.New(cfg)
	return g.a2a.Start(ctx)
}

// stopA2A ends the A2A endpoint's event streams and releases admission's
// identity-provider key cache.
func (g *Gateway) stopA2A() {
	if g.a2a != nil {
		g.a2a.Stop()
	}
	if g.admission != nil {
		g.admission.Close()
	}
}

// isOwnerToken checks the owner credential.
func (g *Gateway) isOwnerToken(token string) bool {
	want := g.owner.current()
	return want != "" && secret.Equal(secret.Hash(token), want)
}

// a2aRoutes registers the A2A endpoint's routes. Runtime routes get the
// gateway's runtime authentication, people's routes (API keys) the owner
// credential or a sign-in session; the endpoint authenticates the others.
func (g *Gateway) a2aRoutes(mux *http.ServeMux) {
	for _, rt := range a2aserver.Routes() {
		if rt.People() {
			g.people(mux, rt.Pattern, func(w http.ResponseWriter, r *http.Request) {
				g.a2a.Serve(rt, "", w, r)
			})
			continue
		}
		if rt.Runtime() {
			g.runtime(mux, rt.Pattern, func(w http.ResponseWriter, r *http.Request) {
				g.a2a.Serve(rt, runtimeOf(r).AgentID, w, r)
			})
			continue
		}
		g.handle(mux, rt.Pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g.a2a.Serve(rt, "", w, r)
		}))
	}
}
