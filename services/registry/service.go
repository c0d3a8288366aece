// Package registry is the runtime registry: it answers runtime heartbeats,
// keeps each runtime's presence (online while heartbeats arrive within the
// runtime's timeout, offline after), and lists an agent's runtimes with the
// fields people see (seed 001 §6).
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/internal/homes"
	"github.com/a2amesh/a2amesh/services/internal/runtimedir"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Config configures the service. Zero values take the documented defaults.
type Config struct {
	Conn   *bus.Conn
	Logger zerolog.Logger
	// HeartbeatTimeout is how long a runtime stays online without a heartbeat.
	// Default 120s (seed 001 §4.2).
	HeartbeatTimeout time.Duration
	// SweepInterval is how often timed-out runtimes are looked for. Default:
	// a twentieth of HeartbeatTimeout, at most 1s.
	SweepInterval time.Duration
	// Metrics receives the service's metrics; nil records none.
	Metrics prometheus.Registerer
	// Region is the region this registry serves: it keeps the presence of
	// the runtimes of the agents homed there, and hands heartbeats and
	// lists about other agents to their home region's registry. Default
	// bus.DefaultRegion.
	Region string
}

func (c *Config) defaults() {
	if c.Region == "" {
		c.Region = bus.DefaultRegion
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = mesh.DefaultHeartbeatTimeout
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = min(c.HeartbeatTimeout/20, time.Second)
	}
}

// Service is the registry.
type Service struct {
	cfg      Config
	presence *bus.Records[mesh.RuntimePresence]
	// beats holds each runtime's last heartbeat, and beatView the
	// registry's own view of them (no other service reads them).
	beats    *bus.Records[beat]
	beatView *bus.Mirror[beat, time.Time]
	// homes holds each agent's home region, which says which region's
	// registry keeps its runtimes' presence.
	homes  *homes.Directory
	dir    *runtimedir.Directory
	events *bus.Publisher
	svc    *bus.Service
	// sweeper marks offline the runtimes whose heartbeats stopped.
	sweeper *bus.Periodic
}

// New returns a service; Start runs it.
func New(cfg Config) *Service {
	cfg.defaults()
	s := &Service{cfg: cfg}
	s.sweeper = &bus.Periodic{Interval: cfg.SweepInterval, Run: s.sweep}
	return s
}

// Start binds to the bus and starts answering.
func (s *Service) Start(ctx context.Context) error {
	js := s.cfg.Conn.JS
	var err error
	if s.presence, err = bus.OpenRecords[mesh.RuntimePresence](ctx, js, bus.BucketPresence); err != nil {
		return err
	}
	if s.beats, err = bus.OpenRecords[beat](ctx, js, bus.BucketHeartbeats); err != nil {
		return err
	}
	s.beatView, err = bus.StartMirror(ctx, js, bus.BucketHeartbeats, bus.MirrorConfig[beat, time.Time]{
		Project: func(_ string, b *beat, _ uint64) (time.Time, bool) { return b.At, true },
		Logger:  s.cfg.Logger,
	})
	if err != nil {
		return err
	}
	if err := s.beatView.WaitReady(ctx); err != nil {
		return fmt.Errorf("registry: load: %w", err)
	}
	if s.homes, err = homes.Open(ctx, js, s.cfg.Region, s.cfg.Logger); err != nil {
		return err
	}
	if s.dir, err = runtimedir.Open(ctx, js, runtimedir.Options{Presence: true, Logger: s.cfg.Logger}); err != nil {
		return err
	}
	s.events = bus.NewPublisher(js, bus.ServiceRegistry).OnPublished(metrics.EventsPublished(s.cfg.Metrics, bus.ServiceRegistry))
	if s.cfg.Metrics != nil {
		// Counted from the presence directory when scraped, so every
		// registry instance reports the same number.
		metrics.RegisterOrExisting(s.cfg.Metrics, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "a2amesh_runtimes_online",
			Help: "Runtimes whose heartbeats arrive within their timeout.",
		}, func() float64 { return float64(s.dir.OnlineCount()) }))
	}
	s.svc, err = bus.Serve(s.cfg.Conn.NC, bus.ServiceSpec{
		Name: bus.ServiceRegistry, Description: "runtime presence", Logger: s.cfg.Logger,
		Region: s.cfg.Region, Route: s.routeRequest,
		Endpoints: []bus.Endpoint{
			meshapi.OpRegistryListRuntimes.Handle(s.handleList),
			meshapi.OpRuntimeHeartbeat.Handle(s.handleHeartbeat),
			meshapi.OpRuntimeGoodbye.Handle(s.handleGoodbye),
		},
	})
	if err != nil {
		return err
	}
	// ctx bounds the start only: the sweep lives until Stop.
	s.sweeper.Start(context.WithoutCancel(ctx))
	return nil
}

// Stop stops answering and waits up to grace for requests in flight.
func (s *Service) Stop(grace time.Duration) {
	if s.svc != nil {
		_ = s.svc.Stop(grace)
	}
	s.sweeper.Stop()
	if s.dir != nil {
		s.dir.Close()
	}
	if s.beatView != nil {
		_ = s.beatView.Stop()
	}
	s.homes.Stop()
}

// routeRequest hands a heartbeat, or a list of runtimes, about an agent
// homed in another region to that region's registry, which keeps its
// runtimes' presence.
func (s *Service) routeRequest(_ context.Context, op string, req *bus.Request) (bus.Route, error) {
	agentID, _, err := req.Runtime()
	if err != nil {
		var in struct {
			AgentID string `json:"agent_id"`
		}
		_ = json.Unmarshal(req.Data, &in)
		agentID = in.AgentID
	}
	// Heartbeats come from every connected runtime: only the view is
	// looked at (an agent it has not seen yet has nothing elsewhere).
	if home, ok := s.homes.Cached(agentID); ok {
		return bus.Route{Region: home}, nil
	}
	return bus.Here, nil
}

// beat is a runtime's last heartbeat, kept under its runtime id in the
// heartbeats bucket.
type beat struct {
	At time.Time `json:"at"`
}

// handleHeartbeat stores the heartbeat's time, and the runtime's presence
// when it changes: a runtime coming online, its adapter's state, its
// timeout, or a heartbeat that comes late (see steady).
func (s *Service) handleHeartbeat(ctx context.Context, in *meshapi.HeartbeatRequest) (*meshapi.HeartbeatResponse, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.dir.Check(ctx, agentID, runtimeID, false); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	p := &mesh.RuntimePresence{
		RuntimeID: runtimeID, AgentID: agentID, Status: mesh.PresenceOnline,
		LastHeartbeatAt: &now, HeartbeatTimeoutMS: s.cfg.HeartbeatTimeout.Milliseconds(),
		AdapterUnreachable: in.AdapterUnreachable,
	}
	steady := s.steady(p)
	if _, err := s.beats.Put(ctx, runtimeID, &beat{At: now}); err != nil {
		return nil, err
	}
	if !steady {
		rev, cameOnline, err := s.storeHeartbeat(ctx, p)
		if err != nil {
			return nil, err
		}
		p.Revision = rev
		if cameOnline {
			s.publishPresence(ctx, mesh.EventRuntimeOnline, p)
		}
	}
	return &meshapi.HeartbeatResponse{Status: mesh.PresenceOnline, HeartbeatTimeoutMS: p.HeartbeatTimeoutMS, ServerTime: now}, nil
}

// handleGoodbye marks a runtime that is stopping on purpose offline at
// once, as the sweep would once its heartbeats had been missing for its
// timeout. A heartbeat it sends after all brings it back online.
func (s *Service) handleGoodbye(ctx context.Context, in *meshapi.Empty) (*meshapi.Empty, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.dir.Check(ctx, agentID, runtimeID, false); err != nil {
		return nil, err
	}
	went := false
	cur, rev, err := s.presence.Modify(ctx, runtimeID, func(cur *mesh.RuntimePresence) error {
		if cur.Status != mesh.PresenceOnline {
			return bus.ErrSkip
		}
		cur.Status = mesh.PresenceOffline
		went = true
		return nil
	})
	if errors.Is(err, mesh.ErrNotFound) {
		return &meshapi.Empty{}, nil
	}
	if err != nil {
		return nil, err
	}
	if went {
		cur.Revision = rev
		s.publishPresence(ctx, mesh.EventRuntimeOffline, cur)
	}
	return &meshapi.Empty{}, nil
}

// steady reports whether a heartbeat changes nothing in the runtime's
// stored presence, so that storing its time is enough: the presence (as
// the view holds it) is online with the same adapter state and timeout,
// and the heartbeat before came less than half a timeout ago. A later
// heartbeat writes the presence as well, with a compare-and-set, which
// settles it against a sweep deciding at the same moment that the runtime
// went silent: the sweep marks a runtime offline only once its last
// heartbeat is a whole timeout old, so while the heartbeats come in time
// the two never decide about the same runtime at once.
func (s *Service) steady(p *mesh.RuntimePresence) bool {
	cur, ok := s.dir.Presence(p.RuntimeID)
	if !ok || cur.Status != mesh.PresenceOnline || cur.AgentID != p.AgentID ||
		cur.AdapterUnreachable != p.AdapterUnreachable || cur.HeartbeatTimeoutMS != p.HeartbeatTimeoutMS {
		return false
	}
	last := s.lastBeat(cur)
	return !last.IsZero() && p.LastHeartbeatAt.Sub(last) < time.Duration(p.HeartbeatTimeoutMS)*time.Millisecond/2
}

// lastBeat is the later of the heartbeat the presence record holds and the
// one the heartbeats view holds.
func (s *Service) lastBeat(p *mesh.RuntimePresence) time.Time {
	var last time.Time
	if p.LastHeartbeatAt != nil {
		last = *p.LastHeartbeatAt
	}
	if at, ok := s.beatView.Get(p.RuntimeID); ok && at.After(last) {
		last = at
	}
	return last
}

// storeHeartbeat writes a heartbeat's presence and says whether the runtime
// came online with it. The presence held in the view is written over with
// compare-and-set at its revision, which spares the read a heartbeat would
// otherwise start with; a view behind the bucket fails the compare, and the
// record is then read and written as any change is.
func (s *Service) storeHeartbeat(ctx context.Context, p *mesh.RuntimePresence) (rev uint64, cameOnline bool, err error) {
	if cur, ok := s.dir.Presence(p.RuntimeID); ok && cur.Revision > 0 {
		rev, err = s.presence.Update(ctx, p.RuntimeID, p, cur.Revision)
		if err == nil {
			return rev, cur.Status != mesh.PresenceOnline, nil
		}
		if !errors.Is(err, mesh.ErrConflict) {
			return 0, false, err
		}
	}
	_, rev, err = s.presence.Modify(ctx, p.RuntimeID, func(cur *mesh.RuntimePresence) error {
		cameOnline = cur.Status != mesh.PresenceOnline
		*cur = *p
		return nil
	})
	if errors.Is(err, mesh.ErrNotFound) {
		rev, err = s.presence.Create(ctx, p.RuntimeID, p)
		cameOnline = true
		if errors.Is(err, mesh.ErrConflict) {
			// A concurrent first heartbeat created it; this one is just as good.
			err, cameOnline = nil, false
		}
	}
	return rev, cameOnline, err
}

// sweep marks offline every runtime whose last heartbeat is older than its
// timeout. The decision is made on the presence record (compare-and-set)
// with the heartbeat's time read from the bucket's leader, not a view.
// It also forgets the runtimes that were replaced or revoked.
func (s *Service) sweep(ctx context.Context) {
	now := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s.forgetRetired(ctx)
	overdue := func(p *mesh.RuntimePresence) bool {
		return now.Sub(s.lastBeat(p)) > time.Duration(p.HeartbeatTimeoutMS)*time.Millisecond
	}
	for _, p := range s.dir.OnlinePresences(overdue) {
		latest, err := s.latestBeat(ctx, p.RuntimeID)
		if err != nil {
			s.cfg.Logger.Warn().Err(err).Str("runtime_id", p.RuntimeID).Msg("heartbeat not read; presence left as it is")
			continue
		}
		went := false
		cur, rev, err := s.presence.Modify(ctx, p.RuntimeID, func(cur *mesh.RuntimePresence) error {
			last := latest
			if cur.LastHeartbeatAt != nil && cur.LastHeartbeatAt.After(last) {
				last = *cur.LastHeartbeatAt
			}
			timeout := time.Duration(cur.HeartbeatTimeoutMS) * time.Millisecond
			if cur.Status != mesh.PresenceOnline || last.IsZero() || time.Since(last) <= timeout {
				return bus.ErrSkip
			}
			cur.Status = mesh.PresenceOffline
			cur.LastHeartbeatAt = &last
			went = true
			return nil
		})
		if err != nil {
			s.cfg.Logger.Warn().Err(err).Str("runtime_id", p.RuntimeID).Msg("presence not updated")
			continue
		}
		if went {
			cur.Revision = rev
			s.publishPresence(ctx, mesh.EventRuntimeOffline, cur)
		}
	}
}

// forgetRetired deletes the heartbeat and presence records of runtimes
// that were replaced or revoked: their runtime records stay, as the
// agent's history, and list them offline; their presence would otherwise
// stay in every presence view for good. So are those of an agent that
// moved to another home region, once they are offline here: its new home
// keeps its presence. A heartbeat already on its way
// when the runtime was revoked may write them again; the next sweep
// deletes them then. The presence is deleted at the revision the view
// holds, so a record written since waits for that sweep too.
func (s *Service) forgetRetired(ctx context.Context) {
	elsewhere := func(agentID string) bool {
		home, ok := s.homes.Cached(agentID)
		return ok && home != s.homes.Region()
	}
	for _, p := range s.dir.RetiredPresences(elsewhere) {
		if err := s.beats.Delete(ctx, p.RuntimeID, 0); err != nil && !errors.Is(err, mesh.ErrNotFound) {
			s.cfg.Logger.Warn().Err(err).Str("runtime_id", p.RuntimeID).Msg("retired runtime's heartbeat not deleted")
			continue
		}
		if err := s.presence.Delete(ctx, p.RuntimeID, p.Revision); err != nil && !errors.Is(err, mesh.ErrNotFound) && !errors.Is(err, mesh.ErrConflict) {
			s.cfg.Logger.Warn().Err(err).Str("runtime_id", p.RuntimeID).Msg("retired runtime's presence not deleted")
		}
	}
}

// latestBeat reads a runtime's last heartbeat from the bucket's leader
// (zero when it never sent one).
func (s *Service) latestBeat(ctx context.Context, runtimeID string) (time.Time, error) {
	b, _, err := s.beats.Latest(ctx, runtimeID)
	if errors.Is(err, mesh.ErrNotFound) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	return b.At, nil
}

func (s *Service) handleList(ctx context.Context, in *meshapi.ListRuntimesRequest) (*meshapi.RuntimeList, error) {
	if !mesh.ValidID(in.AgentID) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "agent %q not found", in.AgentID)
	}
	if err := s.dir.Sync(ctx); err != nil {
		return nil, err
	}
	out := meshapi.RuntimeList{Runtimes: []mesh.RuntimeView{}}
	for _, rt := range s.dir.AgentRuntimes(in.AgentID) {
		out.Runtimes = append(out.Runtimes, s.view(rt, s.currentPresence(ctx, rt.ID)))
	}
	sort.SliceStable(out.Runtimes, func(i, j int) bool {
		return out.Runtimes[i].State == mesh.RuntimeActive && out.Runtimes[j].State != mesh.RuntimeActive
	})
	return &out, nil
}

// currentPresence reads a runtime's presence from the registry's own bucket:
// the directory's view of it trails the registry's writes by a moment, and a
// runtime whose heartbeat was just answered must be listed online.
func (s *Service) currentPresence(ctx context.Context, runtimeID string) *mesh.RuntimePresence {
	p, _, err := s.presence.Get(ctx, runtimeID)
	if err != nil {
		cached, ok := s.dir.Presence(runtimeID)
		if !ok || errors.Is(err, mesh.ErrNotFound) {
			return nil
		}
		copied := *cached
		p = &copied
	}
	// The presence record holds the heartbeat that last changed it; the
	// heartbeats bucket the last one.
	if b, _, err := s.beats.Get(ctx, runtimeID); err == nil && (p.LastHeartbeatAt == nil || b.At.After(*p.LastHeartbeatAt)) {
		at := b.At
		p.LastHeartbeatAt = &at
	}
	return p
}

// notReadyAdapter is why an online runtime whose adapter does not answer
// is not ready.
const notReadyAdapter = "the local adapter does not answer; no task runs are claimed until it does"

// view joins a runtime with its presence (nil: never heartbeated). Only an
// active runtime can be online.
func (s *Service) view(rt *mesh.Runtime, p *mesh.RuntimePresence) mesh.RuntimeView {
	v := mesh.RuntimeView{
		RuntimeID: rt.ID, AgentID: rt.AgentID, DeviceName: rt.DeviceName,
		HostType: rt.LocalExecutor.Type, HostLabel: mesh.HostLabel(rt.LocalExecutor.Type),
		State: rt.State, Status: mesh.PresenceOffline, AttachedAt: rt.AttachedAt,
	}
	if p != nil {
		v.LastHeartbeatAt = p.LastHeartbeatAt
		if rt.State == mesh.RuntimeActive {
			v.Status = p.Status
		}
		if v.Status == mesh.PresenceOnline && p.AdapterUnreachable {
			v.NotReady, v.NotReadyReason = true, notReadyAdapter
		}
	}
	return v
}

func (s *Service) publishPresence(ctx context.Context, typ string, p *mesh.RuntimePresence) {
	view := mesh.RuntimeView{RuntimeID: p.RuntimeID, AgentID: p.AgentID, Status: p.Status, LastHeartbeatAt: p.LastHeartbeatAt}
	if rt, err := s.dir.Runtime(ctx, p.RuntimeID); err == nil {
		view = s.view(rt, p)
		view.Status = p.Status
	}
	err := s.events.Publish(ctx, bus.Event{
		Type: typ, Kind: mesh.KindRuntime, AgentID: p.AgentID, Subject: p.RuntimeID,
		ID: fmt.Sprintf("%s.presence.%d", p.RuntimeID, p.Revision), Sequence: p.Revision, Data: view,
	})
	if err != nil {
		s.cfg.Logger.Error().Err(err).Str("runtime_id", p.RuntimeID).Msg("presence event not published")
	}
}
