package gateway

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/credcache"
)

// runtimeAuth admits runtime credentials on the runtime routes. The
// credential service decides (Authenticate on the bus); its yes is
// remembered while the runtime's record stays at the revision it had then
// (package credcache), so a runtime on the HTTP transport pays one bus round
// trip per credential and record revision, not one per request (a pull, a
// report, a heartbeat).
type runtimeAuth struct {
	client *meshapi.Client
	memory *credcache.Memory[runtimeState, meshapi.Identity]
}

// runtimeState is the one field of a runtime record the view reads.
type runtimeState struct {
	State mesh.RuntimeState `json:"state"`
}

func newRuntimeAuth(ctx context.Context, js jetstream.JetStream, client *meshapi.Client, log zerolog.Logger) (*runtimeAuth, error) {
	memory, err := credcache.Start[runtimeState, meshapi.Identity](ctx, js, bus.BucketRuntimes,
		func(key string, r *runtimeState, rev uint64) (credcache.Record, bool) {
			return credcache.Record{Rev: rev, Active: r.State == mesh.RuntimeActive}, !bus.IsActiveRuntimeKey(key)
		}, log)
	if err != nil {
		return nil, fmt.Errorf("gateway: runtimes: %w", err)
	}
	return &runtimeAuth{client: client, memory: memory}, nil
}

// authenticate resolves a runtime credential to its runtime, or answers
// the credential service's refusal.
func (a *runtimeAuth) authenticate(ctx context.Context, token string) (*meshapi.Identity, error) {
	hash := secret.Hash(token)
	if id, ok := a.memory.Get(hash); ok {
		return &id, nil
	}
	id, err := a.client.Authenticate(ctx, hash)
	if err != nil {
		return nil, err
	}
	a.memory.Put(ctx, hash, id.RuntimeID, id.Revision, *id)
	return id, nil
}

// ended is told that this gateway just ended runtimeID: its next request
// is refused without waiting for the view.
func (a *runtimeAuth) ended(ctx context.Context, runtimeID string) { a.memory.Ended(ctx, runtimeID) }

func (a *runtimeAuth) stop() { a.memory.Stop() }
