package a2aserver

import (
	"context"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
)

// request is what the A2A endpoint's front established about a request before
// the SDK's transport decodes it: the agent, the caller and the protocol
// version. The request handler finds it in the context.
type request struct {
	agent   *mesh.Agent
	caller  *admission.Caller
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
		return &request{agent: &mesh.Agent{}, caller: &admission.Caller{}}
	}
	return r
}
