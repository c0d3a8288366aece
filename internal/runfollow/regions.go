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
	return r.Stream(name), nil
}

// Stream returns the source of the event stream named name.
func (r *Regions) Stream(name string) *Source {
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

// Runs follows the changes of some runs (without their artifacts): a
// Follower of one stream, or Followers of several streams merged.
type Runs interface {
	// NextRun returns the next change of a followed run as its event
	// tells it.
	NextRun(ctx context.Context) (*mesh.TaskRun, error)
	// Stop ends the following: NextRun returns ErrStopped.
	Stop()
}

// FollowRuns follows the changes of runs (without their artifacts) from
// now on, each from its agent's home region's stream: runs of agents homed
// in several regions are followed in each region's stream at once, so no
// region but theirs is on the way (the changes of one run come in order;
// those of runs of different regions in the order they are read). Read the
// runs after it returns to know where the changes start.
func (r *Regions) FollowRuns(ctx context.Context, runs ...*mesh.TaskRun) (Runs, error) {
	var sources []*Source
	of := map[*Source][]*mesh.TaskRun{}
	for _, run := range runs {
		src, _, err := r.Of(ctx, run.TargetAgentID)
		if err != nil {
			return nil, err
		}
		if _, ok := of[src]; !ok {
			sources = append(sources, src)
		}
		of[src] = append(of[src], run)
	}
	if len(sources) <= 1 {
		src := r.gathered
		if len(sources) == 1 {
			src = sources[0]
		}
		return src.FollowRuns(ctx, runs...)
	}
	m := &mergedRuns{runs: make(chan *mesh.TaskRun), failed: make(chan error, len(sources)), done: make(chan struct{})}
	for _, src := range sources {
		f, err := src.FollowRuns(ctx, of[src]...)
		if err != nil {
			m.Stop()
			return nil, err
		}
		m.followers = append(m.followers, f)
	}
	m.start()
	return m, nil
}

// mergedRuns merges the runs followed in several streams: a goroutine a
// stream reads its follower and hands each change on.
type mergedRuns struct {
	followers []*Follower
	runs      chan *mesh.TaskRun
	// failed holds the error of each follower that ended (room for all).
	failed chan error
	done   chan struct{}
	once   sync.Once
	cancel context.CancelFunc
}

func (m *mergedRuns) start() {
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	for _, f := range m.followers {
		go func() {
			for {
				run, err := f.NextRun(ctx)
				if err != nil {
					if ctx.Err() == nil {
						// A follower ended by Stop is not a failure:
						// NextRun says ErrStopped.
						m.failed <- err
					}
					return
				}
				select {
				case m.runs <- run:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
}

// NextRun returns the next change read in any of the streams; once the
// follower of one stream fails, its error; after Stop, ErrStopped.
func (m *mergedRuns) NextRun(ctx context.Context) (*mesh.TaskRun, error) {
	select {
	case <-m.done:
		return nil, ErrStopped
	default:
	}
	select {
	case run := <-m.runs:
		return run, nil
	case err := <-m.failed:
		return nil, err
	case <-m.done:
		return nil, ErrStopped
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Stop stops every stream's follower.
func (m *mergedRuns) Stop() {
	m.once.Do(func() {
		close(m.done)
		if m.cancel != nil {
			m.cancel()
		}
		for _, f := range m.followers {
			f.Stop()
		}
	})
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
