package bus

import (
	"context"

	"github.com/a2amesh/a2amesh/mesh"
)

// Endpoint is one operation a service answers, as the table of operations
// (meshapi.Op.Handle) gives it.
type Endpoint struct {
	// Name is the operation's name.
	Name string
	// Runtime: runtimes send it on their own subjects
	// (RuntimeSubjectPattern(Name)); otherwise it is on
	// ServiceSubject(service, Name).
	Runtime bool
	// Waits: it may wait long for something to happen (a long poll): it
	// is not counted against ServiceSpec.Concurrency.
	Waits   bool
	Handler HandlerFunc
}

// Typed returns the handler of an operation whose request is a Req and
// whose answer a Resp: the request is decoded here, once for every
// operation (unknown fields and malformed input are INVALID_REQUEST), and
// h's error is the answer's. h finds the request itself with RequestOf,
// and a runtime operation's sender with RuntimeOf.
func Typed[Req, Resp any](h func(context.Context, *Req) (*Resp, error)) HandlerFunc {
	return func(ctx context.Context, req *Request) (any, error) {
		var in Req
		if err := req.Decode(&in); err != nil {
			return nil, err
		}
		out, err := h(context.WithValue(ctx, requestKey{}, req), &in)
		if err != nil {
			return nil, err
		}
		if out == nil {
			return struct{}{}, nil
		}
		return out, nil
	}
}

// runtimeOnly refuses a request that did not come on a runtime subject, and
// hands h the ids of the runtime that sent it (RuntimeOf).
func runtimeOnly(h HandlerFunc) HandlerFunc {
	return func(ctx context.Context, req *Request) (any, error) {
		agentID, runtimeID, err := req.Runtime()
		if err != nil {
			return nil, err
		}
		return h(context.WithValue(ctx, runtimeKey{}, [2]string{agentID, runtimeID}), req)
	}
}

type requestKey struct{}

type runtimeKey struct{}

// RequestOf returns the request a typed handler's ctx belongs to.
func RequestOf(ctx context.Context) *Request {
	req, _ := ctx.Value(requestKey{}).(*Request)
	return req
}

// RuntimeOf returns the agent and runtime that sent the runtime operation
// ctx belongs to: the ids of its subject, which the NATS server lets a
// runtime use only for itself. Outside a runtime operation it refuses.
func RuntimeOf(ctx context.Context) (agentID, runtimeID string, err error) {
	ids, ok := ctx.Value(runtimeKey{}).([2]string)
	if !ok {
		return "", "", mesh.Errorf(mesh.CodeInvalidRequest, "not a runtime subject")
	}
	return ids[0], ids[1], nil
}
