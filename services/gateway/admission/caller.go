package admission

import (
	"slices"
	"strings"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Kinds of callers, by the credential they presented.
const (
	KindOwner       = "owner"
	KindAPIKey      = "api_key"
	KindPlatformJWT = "platform_jwt"
	KindExternalJWT = "external_jwt"
	KindPublic      = "public"
)

// Caller is who is calling an A2A endpoint, as far as the credential says.
// It never holds the credential itself. An agent's A2A endpoint gets one
// from Admission.Authenticate, the platform-wide endpoints (partner routes,
// the envelope protocol) from Admission.Admit.
type Caller struct {
	// ID identifies the caller for task visibility: the tasks a caller
	// creates are the ones it may read, cancel and subscribe to.
	ID string
	// Kind is one of the Kind constants: the credential presented.
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

// Can reports whether the caller holds a scope (the owner holds them all).
func (c *Caller) Can(scope string) bool {
	return c.Kind == KindOwner || slices.Contains(c.Scopes, scope)
}

// Owner reports whether the caller presented the owner credential.
func (c *Caller) Owner() bool { return c.Kind == KindOwner }

// Anonymous reports whether the caller presented no credential.
func (c *Caller) Anonymous() bool { return c.Kind == KindPublic }

// Reaches reports whether the caller may use an agent through the
// platform-wide endpoints (docs/a2a.md "Who reaches which agent"): the owner
// reaches every agent; an API key its own agent; a platform-signed token
// the agents its audience names; a token of the configured identity
// provider every agent, as an agent's A2A endpoint admits it for any; and anyone
// reaches a public agent, with the scopes a public agent grants.
func (c *Caller) Reaches(agent *mesh.Agent) bool {
	switch {
	case agent.Public, c.Kind == KindOwner, c.Kind == KindExternalJWT:
		return true
	case c.Kind == KindAPIKey:
		return c.KeyAgentID == agent.ID
	case c.Kind == KindPlatformJWT:
		for _, aud := range c.Audience {
			if aud == agent.ID || strings.HasSuffix(aud, "/a2a/"+agent.ID) {
				return true
			}
		}
	}
	return false
}

// For returns the caller as the endpoint of one agent sees it: someone without
// a credential of their own gets a public agent's scopes.
func (c *Caller) For(agent *mesh.Agent) *Caller {
	if c.Kind != KindPublic || !agent.Public {
		return c
	}
	cp := *c
	cp.Scopes = []string{meshapi.ScopeSend, meshapi.ScopeRead}
	return &cp
}

// Sees reports whether the caller may see a task created by taskCaller (the
// ID of the caller recorded with it; "" for a task no endpoint recorded,
// which only the owner sees).
func (c *Caller) Sees(taskCaller string) bool {
	return c.Kind == KindOwner || (taskCaller != "" && taskCaller == c.ID)
}

// ownerCaller is the caller of the owner credential.
func ownerCaller() *Caller {
	return &Caller{ID: KindOwner, Kind: KindOwner, Scopes: meshapi.A2AScopes(), RateKey: KindOwner}
}
