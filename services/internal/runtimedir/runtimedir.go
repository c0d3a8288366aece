// Package runtimedir is a read-only directory of attached runtimes for the
// services that must check a runtime before acting for it: it mirrors the
// credential service's runtime records and the registry's presence records from
// the bus. Only their owners write those buckets.
package runtimedir

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// Directory answers questions about runtimes from views kept current by
// watching their buckets.
type Directory struct {
	runtimes     *bus.Mirror[mesh.Runtime, *mesh.Runtime]
	presence     *bus.Mirror[mesh.RuntimePresence, *mesh.RuntimePresence]
	runtimeStore *bus.Records[mesh.Runtime]
	presStore    *bus.Records[mesh.RuntimePresence]
}

// Options tune a Directory.
type Options struct {
	// Presence keeps a view of the presence bucket, for a service that asks
	// whether a runtime is online on a hot path (claims) or needs every
	// presence at once (the registry's sweep). A view holds every
	// runtime's presence and is woken by each change of one; without it,
	// Online reads the record.
	Presence bool
	Logger   zerolog.Logger
}

// Open starts the views and waits until they are loaded.
func Open(ctx context.Context, js jetstream.JetStream, opts Options) (*Directory, error) {
	d := &Directory{}
	var err error
	d.runtimes, err = bus.StartMirror(ctx, js, bus.BucketRuntimes, bus.MirrorConfig[mesh.Runtime, *mesh.Runtime]{
		Project: func(key string, r *mesh.Runtime, rev uint64) (*mesh.Runtime, bool) {
			r.Revision = rev
			return r, !bus.IsActiveRuntimeKey(key)
		},
		Logger: opts.Logger,
	})
	if err != nil {
		return nil, err
	}
	if opts.Presence {
		d.presence, err = bus.StartMirror(ctx, js, bus.BucketPresence, bus.MirrorConfig[mesh.RuntimePresence, *mesh.RuntimePresence]{
			Project: func(_ string, p *mesh.RuntimePresence, rev uint64) (*mesh.RuntimePresence, bool) {
				p.Revision = rev
				return p, true
			},
			Logger: opts.Logger,
		})
		if err != nil {
			_ = d.runtimes.Stop()
			return nil, err
		}
	}
	if d.runtimeStore, err = bus.OpenRecords[mesh.Runtime](ctx, js, bus.BucketRuntimes); err != nil {
		return nil, err
	}
	if d.presStore, err = bus.OpenRecords[mesh.RuntimePresence](ctx, js, bus.BucketPresence); err != nil {
		return nil, err
	}
	if err := d.runtimes.WaitReady(ctx); err != nil {
		return nil, fmt.Errorf("runtime directory: %w", err)
	}
	if d.presence != nil {
		if err := d.presence.WaitReady(ctx); err != nil {
			return nil, fmt.Errorf("runtime directory: %w", err)
		}
	}
	return d, nil
}

// Runtime returns a runtime record. A miss in the view is confirmed by a
// fresh read, since an attach may have landed a moment ago.
func (d *Directory) Runtime(ctx context.Context, runtimeID string) (*mesh.Runtime, error) {
	if rt, ok := d.runtimes.Get(runtimeID); ok {
		return rt, nil
	}
	if !mesh.ValidID(runtimeID) {
		return nil, mesh.ErrNotFound
	}
	rt, rev, err := d.runtimeStore.Get(ctx, runtimeID)
	if err != nil {
		return nil, err
	}
	rt.Revision = rev
	return rt, nil
}

// Check returns nil when runtimeID is an active runtime of agentID (and
// online, when needOnline); otherwise an error that tells the runtime what to
// do. Negative answers from the views are confirmed by fresh reads.
func (d *Directory) Check(ctx context.Context, agentID, runtimeID string, needOnline bool) error {
	rt, ok := d.runtimes.Get(runtimeID)
	if !ok || rt.State != mesh.RuntimeActive || rt.AgentID != agentID {
		fresh, rev, err := d.runtimeStore.Get(ctx, runtimeID)
		if errors.Is(err, mesh.ErrNotFound) {
			return mesh.Errorf(mesh.CodeUnauthorized, "unknown runtime; pair the agent again with a new pairing code")
		}
		if err != nil {
			return err
		}
		fresh.Revision = rev
		rt = fresh
	}
	if rt.AgentID != agentID {
		return mesh.Errorf(mesh.CodeForbidden, "runtime does not belong to this agent")
	}
	if rt.State != mesh.RuntimeActive {
		return mesh.Errorf(mesh.CodeRuntimeRevoked, "runtime credential was %s; pair the same agent again with a new pairing code", rt.State)
	}
	if !needOnline || d.Online(ctx, runtimeID) {
		return nil
	}
	return mesh.Errorf(mesh.CodeRuntimeOffline, "runtime is offline: send a heartbeat before pulling work")
}

// Online reports whether the runtime's presence is online: from the view
// when it says so, else from the record.
func (d *Directory) Online(ctx context.Context, runtimeID string) bool {
	if d.presence != nil {
		if p, ok := d.presence.Get(runtimeID); ok && p.Status == mesh.PresenceOnline {
			return true
		}
	}
	p, _, err := d.presStore.Get(ctx, runtimeID)
	return err == nil && p.Status == mesh.PresenceOnline
}

// Presence returns the presence record held in the view (none without
// Options.Presence).
func (d *Directory) Presence(runtimeID string) (*mesh.RuntimePresence, bool) {
	if d.presence == nil {
		return nil, false
	}
	return d.presence.Get(runtimeID)
}

// Sync waits until the runtime view holds every write already stored.
func (d *Directory) Sync(ctx context.Context) error { return d.runtimes.Sync(ctx) }

// AgentRuntimes lists an agent's runtimes from the view, newest first. Call
// Sync first when the answer must include writes made a moment ago.
func (d *Directory) AgentRuntimes(agentID string) []*mesh.Runtime {
	var out []*mesh.Runtime
	d.runtimes.Range(func(_ string, r *mesh.Runtime) bool {
		if r.AgentID == agentID {
			out = append(out, r)
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].AttachedAt.After(out[j].AttachedAt) })
	return out
}

// OnlinePresences copies the presence records that are online and that
// keep accepts (none without Options.Presence). Only those are copied: a
// sweep made every second over 10,000 connected runtimes copies the few it
// acts on, not all of them.
func (d *Directory) OnlinePresences(keep func(*mesh.RuntimePresence) bool) []mesh.RuntimePresence {
	var out []mesh.RuntimePresence
	if d.presence == nil {
		return nil
	}
	d.presence.Range(func(_ string, p *mesh.RuntimePresence) bool {
		if p.Status == mesh.PresenceOnline && keep(p) {
			out = append(out, *p)
		}
		return true
	})
	return out
}

// OnlineCount counts the presence records that are online (none without
// Options.Presence).
func (d *Directory) OnlineCount() int {
	if d.presence == nil {
		return 0
	}
	n := 0
	d.presence.Range(func(_ string, p *mesh.RuntimePresence) bool {
		if p.Status == mesh.PresenceOnline {
			n++
		}
		return true
	})
	return n
}

// RetiredPresences copies the presence records that no longer say
// anything, which their owner deletes (none without Options.Presence):
// those of runtimes that are no longer active (replaced or revoked), and
// the offline ones of agents that moved away (elsewhere says so; their
// presence is kept in their new home region). A presence whose runtime the
// view does not hold yet is not one of them.
func (d *Directory) RetiredPresences(elsewhere func(agentID string) bool) []mesh.RuntimePresence {
	var out []mesh.RuntimePresence
	if d.presence == nil {
		return nil
	}
	d.presence.Range(func(id string, p *mesh.RuntimePresence) bool {
		rt, ok := d.runtimes.Get(id)
		if ok && (rt.State != mesh.RuntimeActive || p.Status == mesh.PresenceOffline && elsewhere(p.AgentID)) {
			out = append(out, *p)
		}
		return true
	})
	return out
}

// Close stops the views.
func (d *Directory) Close() {
	_ = d.runtimes.Stop()
	if d.presence != nil {
		_ = d.presence.Stop()
	}
}
