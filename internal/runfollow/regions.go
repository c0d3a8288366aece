package runfollow

import (
	"context"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Regions reads the events of each agent's runs where they are stored
// first: the event stream of the agent's home region, whose services
// publish them (docs/architecture.md, "Where each fact lives"). A reader in
// a region follows that region's agents without crossing a gateway, and
// goes on while the origin, whose stream gathers every region's events, is
// down. It keeps one Source per region's stream, and one for the gathered
// log, which readers of every agent's events follow.
type Regions struct {
	conn *bus.Conn
	cfg  Config
	home func(ctx context.Context, agentID string) (string, error)

	mu       sync.Mutex
	gathered *Source
	streams  map[string]*Source
}

// NewRegions returns the sources of conn's event streams. home tells an
// agent's home region (nil: every agent's events are read from the
// gathered log). cfg.Stream is ignored.
func NewRegions(conn *bus.Conn, cfg Config, home func(ctx context.Context, agentID string) (string, error)) *Regions {
	r := &Regions{conn: conn, cfg: cfg, home: home, streams: map[string]*Source{}}
	cfg.Stream = bus.EventStream
	r.gathered = NewSource(conn, cfg)
	r.streams[bus.EventStream] = r.gathered
	return r
}

// Gathered is the source of the origin's event stream, which holds every
// region's events.
func (r *Regions) Gathered() *Source { return r.gathered }

// In returns the source of region's event stream.
func (r *Regions) In(ctx context.Context, region string) (*Source, error) {
	name, err := bus.EventStreamIn(ctx, r.conn.JS, region)
	if err != nil {
		return nil, err
	}
	return r.stream(name), nil
}

// stream returns the source of the event stream named name.
func (r *Regions) stream(name string) *Source {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.streams[name]
	if !ok {
		cfg := r.cfg
		cfg.Stream = name
		s = NewSource(r.conn, cfg)
		r.streams[name] = s
	}
	return s
}

// Of returns the source of the stream that stores an agent's events, and
// the agent's home region.
func (r *Regions) Of(ctx context.Context, agentID string) (*Source, string, error) {
	if r.home == nil {
		return r.gathered, "", nil
	}
	region, err := r.home(ctx, agentID)
	if err != nil {
		return nil, "", err
	}
	s, err := r.In(ctx, region)
	return s, region, err
}

// FollowRuns follows the changes of runs of one agent (without their
// artifacts) from now on, from its home region's stream; runs of agents of
// several regions are followed from the gathered log. Read the runs after
// it returns to know where the changes start.
func (r *Regions) FollowRuns(ctx context.Context, runs ...*mesh.TaskRun) (*Follower, error) {
	src := r.gathered
	if len(runs) > 0 {
		var err error
		if src, _, err = r.Of(ctx, runs[0].TargetAgentID); err != nil {
			return nil, err
		}
		for _, run := range runs[1:] {
			if other, _, err := r.Of(ctx, run.TargetAgentID); err != nil || other != src {
				src = r.gathered
				break
			}
		}
	}
	return src.FollowRuns(ctx, runs...)
}

// Await waits until the run is settled, for at most wait, reading its
// events from its agent's home region (see Source.Await).
func (r *Regions) Await(ctx context.Context, client *meshapi.Client, run *mesh.TaskRun, wait time.Duration) (*mesh.TaskRun, error) {
	src, _, err := r.Of(ctx, run.TargetAgentID)
	if err != nil {
		return nil, err
	}
	return src.Await(ctx, client, run, wait)
}
