package credentials

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// regionRecord is where runtimes reach one region's NATS servers: what that
// region's credentials service was told to advertise. Each region's
// credentials service writes its own, under the region's name, and reads
// every other's, so pairing in any region can hand a runtime its agent's
// home region's URLs and the others as fallbacks.
type regionRecord struct {
	Region           string    `json:"region"`
	NATSURL          string    `json:"nats_url,omitempty"`
	NATSWebSocketURL string    `json:"nats_ws_url,omitempty"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// regionRetry bounds the wait between two attempts to store this region's
// record while the bucket cannot be written (the region holding it is
// unreachable).
const regionRetry = 10 * time.Second

// regionFirstTry bounds the attempt to store this region's record made
// while the service starts.
const regionFirstTry = 5 * time.Second

// startRegions starts the mirror of every region's record and stores this
// region's (in the background, while that fails: pairing works on what it
// knows meanwhile).
func (s *Service) startRegions(ctx context.Context) error {
	recs, err := bus.OpenRecords[regionRecord](ctx, s.cfg.Conn.JS, bus.BucketRegions)
	if err != nil {
		return err
	}
	s.regionRecords = recs
	s.regions, err = bus.StartMirror(ctx, s.cfg.Conn.JS, bus.BucketRegions, bus.MirrorConfig[regionRecord, regionRecord]{
		Project: func(_ string, v *regionRecord, _ uint64) (regionRecord, bool) { return *v, true },
		Logger:  s.cfg.Logger,
	})
	if err != nil {
		return err
	}
	if s.cfg.NATSURL == "" && s.cfg.NATSWebSocketURL == "" {
		return nil
	}
	// Stored before the service answers, in the normal case, so a runtime
	// paired as soon as the region is up is told its home region's
	// address; while the bucket cannot be written, in the background.
	own := regionRecord{Region: s.cfg.Region, NATSURL: s.cfg.NATSURL, NATSWebSocketURL: s.cfg.NATSWebSocketURL}
	if s.storeRegion(own, regionFirstTry) == nil {
		return nil
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		wait := time.Second
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(wait):
			}
			if s.storeRegion(own, regionRetry) == nil {
				return
			}
			wait = min(2*wait, regionRetry)
		}
	}()
	return nil
}

// storeRegion writes this region's record, within timeout.
func (s *Service) storeRegion(own regionRecord, timeout time.Duration) error {
	own.UpdatedAt = time.Now().UTC()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	rev, err := s.regionRecords.Put(ctx, own.Region, &own)
	if err != nil {
		s.cfg.Logger.Warn().Err(err).Str("region", own.Region).Msg("this region's NATS URLs not stored yet; retrying")
		return err
	}
	s.regions.Apply(own.Region, &own, rev)
	return nil
}

// handleConnection tells a runtime where to connect now: what pairing
// would tell it today, its agent's home region having perhaps moved since.
// It answers only with the home region's addresses: a runtime told another
// region's would move there.
func (s *Service) handleConnection(ctx context.Context, in *meshapi.Empty) (*meshapi.NATSConnection, error) {
	agentID, runtimeID, err := bus.RuntimeOf(ctx)
	if err != nil {
		return nil, err
	}
	refused := mesh.Errorf(mesh.CodeUnauthorized, "invalid or revoked runtime; pair the same agent again with a new pairing code")
	rec, _, err := s.runtimes.Get(ctx, runtimeID)
	if err != nil {
		return nil, unlessUnreadable(err, refused)
	}
	if rec.AgentID != agentID || rec.State != mesh.RuntimeActive {
		return nil, refused
	}
	agent, _, err := s.agents.Get(ctx, agentID)
	if err != nil {
		return nil, unlessUnreadable(err, refused)
	}
	nc, found := s.natsConnection(ctx, agent.HomeRegion, runtimeID)
	if !found {
		return nil, mesh.Errorf(mesh.CodeUnavailable, "region %s's NATS addresses are not known in region %s yet; connect as before", agent.HomeRegion, s.cfg.Region)
	}
	return &nc, nil
}

// natsConnection is what runtimeID, of an agent homed in home, is told:
// that region's URLs first, then every other region's as fallbacks, in name
// order, and its private reply inbox. A home region this region's view has
// not heard of yet (its record was stored a moment ago in another region)
// is read from the bucket; one that has no record gets this region's own
// URLs, and found is false. An agent without a home region gets this
// region's.
func (s *Service) natsConnection(ctx context.Context, home, runtimeID string) (c meshapi.NATSConnection, found bool) {
	own := regionRecord{Region: s.cfg.Region, NATSURL: s.cfg.NATSURL, NATSWebSocketURL: s.cfg.NATSWebSocketURL}
	known := map[string]regionRecord{own.Region: own}
	if s.regions != nil {
		s.regions.Range(func(name string, r regionRecord) bool {
			if name != own.Region {
				known[name] = r
			}
			return true
		})
	}
	first, ok := known[home]
	if !ok && home != "" && s.regionRecords != nil {
		if r, _, err := s.regionRecords.Get(ctx, home); err == nil {
			first, ok = *r, true
			known[home] = *r
		}
	}
	found = home == "" || ok
	if !ok {
		first = own
	}
	c = meshapi.NATSConnection{URL: first.NATSURL, WSURL: first.NATSWebSocketURL, Region: first.Region, InboxPrefix: bus.RuntimeInboxPrefix(runtimeID)}
	names := make([]string, 0, len(known))
	for name := range known {
		names = append(names, name)
	}
	slices.SortFunc(names, strings.Compare)
	for _, name := range names {
		r := known[name]
		if name == first.Region || (r.NATSURL == "" && r.NATSWebSocketURL == "") {
			continue
		}
		c.Fallbacks = append(c.Fallbacks, meshapi.NATSRegion{Region: name, URL: r.NATSURL, WSURL: r.NATSWebSocketURL})
	}
	return c, found
}

// serviceRegions names the regions whose services said where their NATS
// servers are: those that keep an event stream.
func (s *Service) serviceRegions() []string {
	var names []string
	if s.regions != nil {
		s.regions.Range(func(name string, _ regionRecord) bool {
			names = append(names, name)
			return true
		})
	}
	return names
}
