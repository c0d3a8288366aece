package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// runtimeAuth admits runtime credentials on the runtime routes. The
// credential service decides (Authenticate on the bus); its yes is
// remembered, by the credential's hash, only while the runtime's record
// stays at the revision it had then. A view of the runtimes bucket, fed by a
// watch, tells that: revoking, replacing or deleting a runtime changes its
// record, and the next request of its credential after the view holds the
// change asks the credential service again, which refuses it. A runtime on
// the HTTP transport thus pays one bus round trip per credential and record
// revision, not one per request (a pull, a report, a heartbeat).
type runtimeAuth struct {
	client *meshapi.Client
	view   *bus.Mirror[runtimeState, runtimeRevision]
	mu     sync.Mutex
	// admitted maps a credential's hash to the runtime it was admitted as.
	admitted map[string]admittedRuntime
	now      func() time.Time
	log      zerolog.Logger
}

// runtimeState is the one field of a runtime record the view reads.
type runtimeState struct {
	State mesh.RuntimeState `json:"state"`
}

// runtimeRevision is what the view keeps of a runtime: the revision of its
// record, and whether the record was active at it.
type runtimeRevision struct {
	rev    uint64
	active bool
}

type admittedRuntime struct {
	id  meshapi.Identity
	rev uint64
	at  time.Time
}

const (
	// admittedMax bounds the remembered credentials; past it they are all
	// forgotten and asked for again, which costs a round trip each, never
	// a wrong answer.
	admittedMax = 1 << 16
	// admittedMaxAge bounds how long a yes is remembered even when the
	// view saw no change: a limit on what a watch that fell silent could
	// let through.
	admittedMaxAge = time.Minute
)

func newRuntimeAuth(ctx context.Context, js jetstream.JetStream, client *meshapi.Client, log zerolog.Logger) (*runtimeAuth, error) {
	view, err := bus.StartMirror(ctx, js, bus.BucketRuntimes, bus.MirrorConfig[runtimeState, runtimeRevision]{
		Project: func(key string, r *runtimeState, rev uint64) (runtimeRevision, bool) {
			return runtimeRevision{rev: rev, active: r.State == mesh.RuntimeActive}, !bus.IsActiveRuntimeKey(key)
		},
		Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: runtimes view: %w", err)
	}
	if err := view.WaitReady(ctx); err != nil {
		_ = view.Stop()
		return nil, fmt.Errorf("gateway: runtimes view: %w", err)
	}
	return &runtimeAuth{client: client, view: view, admitted: map[string]admittedRuntime{}, now: time.Now, log: log}, nil
}

// authenticate resolves a runtime credential to its runtime, or answers
// the credential service's refusal.
func (a *runtimeAuth) authenticate(ctx context.Context, token string) (*meshapi.Identity, error) {
	hash := secret.Hash(token)
	if id, ok := a.remembered(hash); ok {
		return id, nil
	}
	id, err := a.client.Authenticate(ctx, hash)
	if err != nil {
		return nil, err
	}
	a.remember(hash, id)
	return id, nil
}

// remembered returns the runtime a credential was admitted as, while its
// record is still at the revision it was admitted at and active.
func (a *runtimeAuth) remembered(hash string) (*meshapi.Identity, bool) {
	a.mu.Lock()
	adm, ok := a.admitted[hash]
	a.mu.Unlock()
	if !ok {
		return nil, false
	}
	cur, ok := a.view.Get(adm.id.RuntimeID)
	if !ok || !cur.active || cur.rev != adm.rev || a.now().Sub(adm.at) > admittedMaxAge {
		a.forget(hash)
		return nil, false
	}
	id := adm.id
	return &id, true
}

// remember notes a yes of the credential service when the view holds the
// very revision of the record the yes was read from, active: a view behind
// or ahead of it (the record changed meanwhile) remembers nothing, and the
// next request asks again.
func (a *runtimeAuth) remember(hash string, id *meshapi.Identity) {
	cur, ok := a.view.Get(id.RuntimeID)
	if !ok || !cur.active || id.Revision == 0 || cur.rev != id.Revision {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.admitted) >= admittedMax {
		clear(a.admitted)
	}
	a.admitted[hash] = admittedRuntime{id: *id, rev: cur.rev, at: a.now()}
}

func (a *runtimeAuth) forget(hash string) {
	a.mu.Lock()
	delete(a.admitted, hash)
	a.mu.Unlock()
}

// ended is told that this gateway just ended runtimeID, so its next request
// is refused without waiting for the view. Forgetting alone would not do: a
// request of the runtime admitted by the credential service just before the
// revocation could remember the credential again while the view still holds
// the active record. Once the view has caught up with the bucket it holds the
// ended record, and nothing of the runtime is remembered again.
func (a *runtimeAuth) ended(ctx context.Context, runtimeID string) {
	if err := a.view.Sync(ctx); err != nil {
		a.log.Warn().Err(err).Str("runtime_id", runtimeID).Msg("runtimes view not caught up after a revocation; its credential may be admitted until it is")
	}
	a.forgetRuntime(runtimeID)
}

// forgetRuntime forgets every credential admitted as runtimeID.
func (a *runtimeAuth) forgetRuntime(runtimeID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for hash, adm := range a.admitted {
		if adm.id.RuntimeID == runtimeID {
			delete(a.admitted, hash)
		}
	}
}

func (a *runtimeAuth) stop() { _ = a.view.Stop() }
