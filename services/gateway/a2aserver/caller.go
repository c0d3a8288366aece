package a2aserver

import (
	"context"
	"slices"
	"strings"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Kinds of callers, by the credential they presented.
const (
	callerOwner       = "owner"
	callerAPIKey      = "api_key"
	callerPlatformJWT = "platform_jwt"
	callerExternalJWT = "external_jwt"
	callerPublic      = "public"
)

// Caller is who is calling an A2A door, as far as the credential says. It
// never holds the credential itself. The older doors (partner routes, the
// envelope protocol) get one from Server.Identify.
type Caller struct {
	// ID identifies the caller for task visibility: the tasks a caller
	// creates are the ones it may read, cancel and subscribe to.
	ID   string
	Kind string
	// AgentID is the agent the platform acts for (platform JWTs): the run's
	// initiator_agent_id.
	AgentID string
	Scopes  []string
	// RateKey is what the rate limit counts requests under: the caller, or
	// the client address of a caller without a credential.
	RateKey string
	// KeyAgentID is the agent an API key belongs to: the one agent it reaches.
	KeyAgentID string
	// Audience lists what a platform token was made for (agent ids or A2A
	// URLs): the agents it reaches.
	Audience []string
	// ParentTaskRunID and DelegationChain come from the token the platform
	// signed for a delegation: the new task's parent and its chain.
	ParentTaskRunID string
	DelegationChain []string
}

// can reports whether the caller holds a scope. The owner may do anything.
func (c *Caller) can(scope string) bool {
	return c.Kind == callerOwner || slices.Contains(c.Scopes, scope)
}

// Can reports whether the caller holds a scope (the owner holds them all).
func (c *Caller) Can(scope string) bool { return c.can(scope) }

// Owner reports whether the caller presented the owner credential.
func (c *Caller) Owner() bool { return c.Kind == callerOwner }

// Anonymous reports whether the caller presented no credential.
func (c *Caller) Anonymous() bool { return c.Kind == callerPublic }

// Reaches reports whether the caller may use an agent through the
// platform-wide doors (docs/a2a.md "Who reaches which agent"): the owner
// reaches every agent; an API key its own agent; a platform-signed token
// the agents its audience names; a token of the configured identity
// provider every agent, as the per-agent door admits it for any; and anyone
// reaches a public agent, with the scopes a public agent grants.
func (c *Caller) Reaches(agent *mesh.Agent) bool {
	switch {
	case agent.Public, c.Kind == callerOwner, c.Kind == callerExternalJWT:
		return true
	case c.Kind == callerAPIKey:
		return c.KeyAgentID == agent.ID
	case c.Kind == callerPlatformJWT:
		for _, aud := range c.Audience {
			if aud == agent.ID || strings.HasSuffix(aud, "/a2a/"+agent.ID) {
				return true
			}
		}
	}
	return false
}

// For returns the caller as the door of one agent sees it: someone without
// a credential of their own gets a public agent's scopes.
func (c *Caller) For(agent *mesh.Agent) *Caller {
	if c.Kind != callerPublic || !agent.Public {
		return c
	}
	cp := *c
	cp.Scopes = []string{meshapi.ScopeSend, meshapi.ScopeRead}
	return &cp
}

// Sees reports whether the caller may see a task created by taskCaller (the
// ID of the caller recorded with it; "" for a task no door recorded, which
// only the owner sees).
func (c *Caller) Sees(taskCaller string) bool { return c.sees(taskCaller) }

// sees reports whether the caller may see a task created by taskCaller
// (empty: a task created through another door, which only the owner sees).
func (c *Caller) sees(taskCaller string) bool {
	return c.Kind == callerOwner || (taskCaller != "" && taskCaller == c.ID)
}

func ownerCaller() *Caller {
	return &Caller{ID: callerOwner, Kind: callerOwner, Scopes: meshapi.A2AScopes(), RateKey: callerOwner}
}

// request is what the A2A door's front established about a request before
// the SDK's transport decodes it: the agent, the caller and the protocol
// version. The request handler finds it in the context.
type request struct {
	agent   *mesh.Agent
	caller  *Caller
	version string
}

type requestKey struct{}

func withRequest(ctx context.Context, r *request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// requestOf returns the request the front established; the handler is only
// reached through the front, so it is always there.
func requestOf(ctx context.Context) *request {
	r, _ := ctx.Value(requestKey{}).(*request)
	if r == nil {
		return &request{agent: &mesh.Agent{}, caller: &Caller{}}
	}
	return r
}
