package a2aserver

import (
	"context"
	"slices"

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

// caller is who is calling an agent's A2A door, as far as the credential
// says. It never holds the credential itself.
type caller struct {
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
}

// can reports whether the caller holds a scope. The owner may do anything.
func (c *caller) can(scope string) bool {
	return c.Kind == callerOwner || slices.Contains(c.Scopes, scope)
}

// sees reports whether the caller may see a task created by taskCaller
// (empty: a task created through another door, which only the owner sees).
func (c *caller) sees(taskCaller string) bool {
	return c.Kind == callerOwner || (taskCaller != "" && taskCaller == c.ID)
}

func ownerCaller() *caller {
	return &caller{ID: callerOwner, Kind: callerOwner, Scopes: meshapi.A2AScopes(), RateKey: callerOwner}
}

// request is what the A2A door's front established about a request before
// the SDK's transport decodes it: the agent, the caller and the protocol
// version. The request handler finds it in the context.
type request struct {
	agent   *mesh.Agent
	caller  *caller
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
		return &request{agent: &mesh.Agent{}, caller: &caller{}}
	}
	return r
}
