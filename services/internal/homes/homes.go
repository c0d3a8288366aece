// Package homes tells each agent's home region, the region that keeps its
// runs, artifacts and A2A tasks (docs/architecture.md, "Where each fact
// lives"), and the regions that may keep something: those agents are homed
// in, and those whose services said where their NATS servers are. It reads
// the agents and regions buckets (this region's copies); only the agents
// and credentials services write them.
package homes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// Directory answers where agents are homed from a view kept current by
// watching the agents bucket.
type Directory struct {
	region string
	// view watches the agents bucket for a directory of its own (Open); a
	// service that keeps a view of the agents already feeds it (Fed).
	view  *bus.Mirror[mesh.Agent, struct{}]
	store *bus.Records[mesh.Agent]
	// served is the regions whose credentials services stored their
	// NATS addresses: regions running services, with agents or not.
	served *bus.Mirror[struct{}, struct{}]

	mu sync.RWMutex
	// homes is each agent's home region, and count the agents of each.
	homes map[string]string
	count map[string]int
	// others is the sorted list of regions other than this one with agents,
	// nil when it must be made again.
	others []string
}

// Open starts the view for a service of region and waits until it is
// loaded.
func Open(ctx context.Context, js jetstream.JetStream, region string, log zerolog.Logger) (*Directory, error) {
	d, err := Fed(ctx, js, region, log)
	if err != nil {
		return nil, err
	}
	d.view, err = bus.StartMirror(ctx, js, bus.BucketAgents, bus.MirrorConfig[mesh.Agent, struct{}]{
		// The home is kept by Observe; the view holds only the keys, for
		// their deletions.
		Project: func(id string, a *mesh.Agent, _ uint64) (struct{}, bool) {
			d.Observe(id, &a.HomeRegion)
			return struct{}{}, true
		},
		OnChange: func(id string, kept *struct{}) {
			if kept == nil {
				d.Observe(id, nil)
			}
		},
		Logger: log,
	})
	if err != nil {
		d.Stop()
		return nil, err
	}
	if err := d.view.WaitReady(ctx); err != nil {
		d.Stop()
		return nil, fmt.Errorf("homes: load: %w", err)
	}
	return d, nil
}

// Fed returns a directory without a view of the agents bucket of its own,
// for a service that keeps one: its view calls Observe with each agent's
// change, and its readiness is the directory's. Until then, Of reads the
// store. It waits until the regions running services are loaded.
func Fed(ctx context.Context, js jetstream.JetStream, region string, log zerolog.Logger) (*Directory, error) {
	d := &Directory{region: region, homes: map[string]string{}, count: map[string]int{}}
	var err error
	if d.store, err = bus.OpenRecords[mesh.Agent](ctx, js, bus.BucketAgents); err != nil {
		return nil, err
	}
	d.served, err = bus.StartMirror(ctx, js, bus.BucketRegions, bus.MirrorConfig[struct{}, struct{}]{
		Project:  func(string, *struct{}, uint64) (struct{}, bool) { return struct{}{}, true },
		OnChange: func(string, *struct{}) { d.mu.Lock(); d.others = nil; d.mu.Unlock() },
		Logger:   log,
	})
	if err != nil {
		return nil, err
	}
	if err := d.served.WaitReady(ctx); err != nil {
		d.Stop()
		return nil, fmt.Errorf("homes: load: %w", err)
	}
	return d, nil
}

// Stop stops the views.
func (d *Directory) Stop() {
	if d == nil {
		return
	}
	if d.view != nil {
		_ = d.view.Stop()
	}
	if d.served != nil {
		_ = d.served.Stop()
	}
}

// Region is the region of the service the directory serves.
func (d *Directory) Region() string { return d.region }

// Cached returns an agent's home region as the view has it, without reading
// the store: for hot paths where an agent the view has not seen yet has
// nothing to be routed (a heartbeat).
func (d *Directory) Cached(agentID string) (string, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	home, ok := d.homes[agentID]
	return home, ok
}

// Of returns an agent's home region. An agent the view has not seen yet
// (created a moment ago, in another region) is read from this region's copy
// of the agents bucket, then from the region that owns it; mesh NOT_FOUND
// when it is in neither.
func (d *Directory) Of(ctx context.Context, agentID string) (string, error) {
	if home, ok := d.Cached(agentID); ok {
		return home, nil
	}
	if !mesh.ValidID(agentID) {
		return "", mesh.Errorf(mesh.CodeNotFound, "agent %q not found", agentID)
	}
	a, _, err := d.store.Get(ctx, agentID)
	if errors.Is(err, mesh.ErrNotFound) {
		a, _, err = d.store.Latest(ctx, agentID)
	}
	if err != nil {
		return "", err
	}
	if a.HomeRegion == "" {
		// Stored before agents had a home: the agents service gives it
		// the region it runs in, which for such a deployment is this one.
		return d.region, nil
	}
	return a.HomeRegion, nil
}

// Route routes a request about an agent to its home region's copy of a
// service. An agent that cannot be found is answered here, which says what
// is wrong with it.
func (d *Directory) Route(ctx context.Context, agentID string) bus.Route {
	home, err := d.Of(ctx, agentID)
	if err != nil {
		return bus.Here
	}
	return bus.Route{Region: home}
}

// RouteRuntime routes a request a runtime sent to its agent's home
// region's copy of a service; ok is false when the request did not come
// from a runtime.
func (d *Directory) RouteRuntime(ctx context.Context, req *bus.Request) (route bus.Route, ok bool) {
	agentID, _, err := req.Runtime()
	if err != nil {
		return bus.Route{}, false
	}
	return d.Route(ctx, agentID), true
}

// Routes is the route function of a service that keeps each agent's
// records in its home region: a request a runtime sent goes to its agent's
// home region's copy (RouteRuntime), any other where byOp says.
func (d *Directory) Routes(byOp func(ctx context.Context, op string, req *bus.Request) bus.Route) bus.RouteFunc {
	return func(ctx context.Context, op string, req *bus.Request) (bus.Route, error) {
		if route, ok := d.RouteRuntime(ctx, req); ok {
			return route, nil
		}
		return byOp(ctx, op, req), nil
	}
}

// RouteAgent routes a request about the agent its JSON body names in
// agent_id, as Route does. A body that names none (or does not decode) is
// answered here.
func (d *Directory) RouteAgent(ctx context.Context, body []byte) bus.Route {
	var in struct {
		AgentID string `json:"agent_id"`
	}
	_ = json.Unmarshal(body, &in)
	return d.Route(ctx, in.AgentID)
}

// Ask routes a request about something by id that this region may not keep:
// answered here when it does, else by the region that does (bus.Route.Ask).
func (d *Directory) Ask() bus.Route { return bus.Route{Ask: d.Others()} }

// Others names the regions other than this one that may keep what this
// one does not: those where agents are homed, and those running services
// (a conversation is kept where it was started).
func (d *Directory) Others() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.others == nil {
		names := map[string]bool{}
		for name := range d.count {
			names[name] = true
		}
		d.served.Range(func(name string, _ struct{}) bool {
			names[name] = true
			return true
		})
		delete(names, d.region)
		d.others = make([]string, 0, len(names))
		for name := range names {
			d.others = append(d.others, name)
		}
		sort.Strings(d.others)
	}
	return d.others
}

// Observe records an agent's home region as a view of the agents bucket
// sees it: home is nil when the agent was deleted, and empty for an agent
// stored before agents had a home (Of reads it). It keeps the count of
// agents per region as agents come, move and go.
func (d *Directory) Observe(agentID string, home *string) {
	now := ""
	if home != nil {
		now = *home
	}
	d.mu.RLock()
	old, had := d.homes[agentID]
	d.mu.RUnlock()
	if had == (now != "") && old == now {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	old, had = d.homes[agentID]
	if had {
		if d.count[old]--; d.count[old] <= 0 {
			delete(d.count, old)
		}
		delete(d.homes, agentID)
	}
	if now != "" {
		d.homes[agentID] = now
		d.count[now]++
	}
	d.others = nil
}

// EventStreams names the event streams a reader of every agent's events
// reads, each region's where its events are stored first: this region's,
// then those of the regions Others names that keep one.
func (d *Directory) EventStreams(ctx context.Context, js jetstream.JetStream) ([]bus.RegionStream, error) {
	return bus.RegionStreams(ctx, js, d.Others())
}
