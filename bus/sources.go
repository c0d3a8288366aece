package bus

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// Streams that copy other streams (sources): the origin's event log
// gathers every region's events, and each region's aggregate of an owned
// bucket gathers every region's records (owned.go). The server copies
// them; two things it does not do are done here.

// sourceSettle is how long addStreamSource waits before it checks that its
// change of a stream's sources was not overwritten by another process's.
const sourceSettle = 200 * time.Millisecond

// addStreamSource makes stream source src (by its name), unless it does.
// A stream's sources are changed by replacing its configuration, so two
// processes changing them at once may lose one's change: it is checked
// once settled, and made again if lost. Each call to the server is bounded
// by try.
func addStreamSource(ctx context.Context, js jetstream.JetStream, stream string, src *jetstream.StreamSource) error {
	for attempt := 0; ; attempt++ {
		tctx, cancel := context.WithTimeout(ctx, provisionTry)
		s, err := js.Stream(tctx, stream)
		if err != nil {
			cancel()
			return fmt.Errorf("provision stream %s: %w", stream, err)
		}
		cfg := s.CachedInfo().Config
		if slices.ContainsFunc(cfg.Sources, func(have *jetstream.StreamSource) bool { return have.Name == src.Name }) {
			cancel()
			return nil
		}
		if attempt == 5 {
			cancel()
			return fmt.Errorf("provision stream %s: source %s: changed by others meanwhile, five times", stream, src.Name)
		}
		cfg.Sources = append(cfg.Sources, src)
		_, err = js.UpdateStream(tctx, cfg)
		cancel()
		if err != nil {
			return fmt.Errorf("provision stream %s: source %s: %w", stream, src.Name, err)
		}
		select {
		case <-time.After(sourceSettle):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// How sources are tended (TendSources).
const (
	// SourceCheckInterval is how often a process looks at its region's
	// sourcing streams.
	SourceCheckInterval = 4 * time.Second
	// SourceStallAfter is how long a source may go unheard (a healthy one
	// hears its origin's heartbeat every second) before it is restarted,
	// once its origin answers. The server retries a source whose origin
	// failed it with a wait that grows by 10 s a failure up to two
	// minutes, and nothing shortens that wait when the origin returns
	// across a gateway: a region's copy of what another region wrote would
	// lag by that much after every outage or slow start.
	SourceStallAfter = 8 * time.Second
	// sourceAnswerWait bounds the question whether a source's stream
	// answers: a round trip to the farthest region.
	sourceAnswerWait = time.Second
	// sourceRestartGrace is how long a restarted source is left to connect
	// before any process restarts it again: a server under load may take
	// that long to make the consumer a source reads through, and every
	// restart starts that over, so the processes of a region, each
	// restarting it in turn, could keep it from ever copying.
	sourceRestartGrace = 30 * time.Second
)

// metaRestarted, followed by a source's name, is the key of the stream's
// metadata that holds when that source was last restarted (RFC 3339):
// the processes of a region tend the same streams, and each learns there
// of the others' restarts.
const metaRestarted = "a2amesh.restarted."

// restartedLately says whether the source name of the stream configured as
// cfg was restarted less than sourceRestartGrace ago.
func restartedLately(cfg jetstream.StreamConfig, name string) bool {
	at, err := time.Parse(time.RFC3339Nano, cfg.Metadata[metaRestarted+name])
	return err == nil && time.Since(at) < sourceRestartGrace
}

// SourceTending is the job that keeps the streams of this process's
// region that copy other streams copying, every SourceCheckInterval
// from Start to Stop: it adds the sources a region's provisioning could
// not add while a region was down (every owner region's records to this
// region's aggregates), and restarts a source unheard for
// SourceStallAfter whose origin answers, which ends the server's backoff.
// A restarted source goes on from the last message the stream copied
// from it (the server finds it in the stream), so nothing is copied twice
// or skipped. It does nothing on a server in no cluster. Any number of
// processes may tend one region at once: each change is checked as
// addStreamSource does.
func SourceTending(js jetstream.JetStream, log zerolog.Logger) *Periodic {
	return &Periodic{Interval: SourceCheckInterval, Run: newTender(js, log).pass}
}

// newTender returns a tending of the sources of js's region.
func newTender(js jetstream.JetStream, log zerolog.Logger) *tender {
	return &tender{js: js, log: log, region: connRegion(js), unheard: map[string]time.Time{}, failing: map[string]time.Time{}, silent: map[string]bool{}}
}

// tender is one process's tending of its region's sources.
type tender struct {
	js     jetstream.JetStream
	log    zerolog.Logger
	region string
	// unheard is when each source (stream/source) was first seen never
	// heard from (the server reports Active -1 until a source connects).
	unheard map[string]time.Time
	// failing is when adding each source (stream/source) first failed,
	// until it is added.
	failing map[string]time.Time
	// silent are the regions whose streams did not answer in this pass:
	// their other sources are not asked again until the next.
	silent map[string]bool
}

// pass looks at each sourcing stream of the region once.
func (t *tender) pass(ctx context.Context) {
	if t.region == "" {
		return
	}
	origin, err := originRegion(ctx, t.js)
	if err != nil {
		return
	}
	t.silent = map[string]bool{}
	if origin == t.region {
		t.tend(ctx, EventStream, func(name string) string { r, _ := strings.CutPrefix(name, EventStream+"_"); return r }, nil)
	}
	if !ownedLayout(ctx, t.js) {
		return
	}
	owners := t.ownerRegions(ctx, origin)
	for bucket := range ownedBuckets {
		agg := aggregateIn(bucket, t.region, origin)
		var want []*jetstream.StreamSource
		for _, r := range owners {
			want = append(want, ownedSource(OwnerBucket(bucket, r), agg))
		}
		t.tend(ctx, "KV_"+agg, func(name string) string { return ownerRegion(bucket, name) }, want)
	}
}

// ownerRegions are the regions that keep records of their own: those
// whose owned agents bucket the origin's agents bucket sources (every
// region registers each owned bucket there, the agents' first). Asked of
// the origin once a pass, for every bucket; none while it does not answer.
func (t *tender) ownerRegions(ctx context.Context, origin string) []string {
	if refusal(t.js.Conn(), origin) != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, sourceAnswerWait)
	defer cancel()
	s, err := t.js.Stream(ctx, "KV_"+BucketAgents)
	if err != nil {
		t.silent[origin] = true
		return nil
	}
	var regions []string
	for _, src := range s.CachedInfo().Config.Sources {
		if r := ownerRegion(BucketAgents, src.Name); r != "" {
			regions = append(regions, r)
		}
	}
	return regions
}

// tend adds the sources of want that stream lacks, and restarts its
// stalled ones; regionOf names the region of a source's stream.
func (t *tender) tend(ctx context.Context, stream string, regionOf func(string) string, want []*jetstream.StreamSource) {
	tctx, cancel := context.WithTimeout(ctx, provisionTry)
	defer cancel()
	s, err := t.js.Stream(tctx, stream)
	if err != nil {
		return
	}
	info := s.CachedInfo()
	for _, src := range want {
		if slices.ContainsFunc(info.Config.Sources, func(have *jetstream.StreamSource) bool { return have.Name == src.Name }) || !t.answers(ctx, regionOf(src.Name), src.Name) {
			continue
		}
		key := stream + "/" + src.Name
		err := addStreamSource(ctx, t.js, stream, src)
		if err == nil {
			delete(t.failing, key)
			continue
		}
		// Tried again next pass. A stream still starting (offline just
		// after its server came back) refuses a change for a moment:
		// only a failure that lasts is worth an operator's attention.
		first, seen := t.failing[key]
		if !seen {
			t.failing[key] = time.Now()
		}
		ev := t.log.Debug()
		if seen && time.Since(first) > SourceStallAfter {
			ev = t.log.Warn()
		}
		ev.Err(err).Str("stream", stream).Str("source", src.Name).Msg("could not add a region's source")
	}
	for _, si := range info.Sources {
		key := stream + "/" + si.Name
		stalled := si.Active > SourceStallAfter
		if si.Active < 0 {
			first, seen := t.unheard[key]
			if !seen {
				t.unheard[key] = time.Now()
			}
			stalled = seen && time.Since(first) > SourceStallAfter
		} else {
			delete(t.unheard, key)
		}
		if !stalled || restartedLately(info.Config, si.Name) {
			continue
		}
		if region := regionOf(si.Name); !t.answers(ctx, region, si.Name) {
			// Unheard for a while, and its stream does not answer: the
			// region is remembered unreachable, as a request that found
			// nothing there would have it (readiness names it, requests
			// for it are refused at once, a probe forgets it once it
			// answers), although no request of this process went there.
			if region != "" && region != t.region {
				markDown(t.js.Conn(), region, "its streams do not answer")
			}
			continue
		}
		delete(t.unheard, key)
		if err := t.restart(ctx, stream, si.Name); err != nil {
			t.log.Warn().Err(err).Str("stream", stream).Str("source", si.Name).Msg("could not restart a stalled source")
			continue
		}
		t.log.Info().Str("stream", stream).Str("source", si.Name).Dur("unheard_ms", si.Active).Msg("restarted a stalled source")
	}
}

// answers reports whether a source's stream, of region, answers now (its
// leader is reachable): a region that did not answer in this pass, or
// that the connection remembers as unreachable, is not asked.
func (t *tender) answers(ctx context.Context, region, name string) bool {
	if t.silent[region] || region != "" && refusal(t.js.Conn(), region) != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, sourceAnswerWait)
	defer cancel()
	if _, err := t.js.Stream(ctx, name); err != nil {
		t.silent[region] = true
		return false
	}
	return true
}

// restart takes source name out of stream's configuration and puts the
// same source back: the server then connects it at once, from the last
// message the stream holds of it.
func (t *tender) restart(ctx context.Context, stream, name string) error {
	tctx, cancel := context.WithTimeout(ctx, provisionTry)
	defer cancel()
	s, err := t.js.Stream(tctx, stream)
	if err != nil {
		return err
	}
	cfg := s.CachedInfo().Config
	i := slices.IndexFunc(cfg.Sources, func(src *jetstream.StreamSource) bool { return src.Name == name })
	if i < 0 {
		return nil
	}
	if restartedLately(cfg, name) {
		return nil // another process restarted it meanwhile
	}
	src := cfg.Sources[i]
	cfg.Sources = slices.Delete(slices.Clone(cfg.Sources), i, i+1)
	cfg.Metadata = maps.Clone(cfg.Metadata)
	if cfg.Metadata == nil {
		cfg.Metadata = map[string]string{}
	}
	cfg.Metadata[metaRestarted+name] = time.Now().UTC().Format(time.RFC3339Nano)
	if _, err := t.js.UpdateStream(tctx, cfg); err != nil {
		return fmt.Errorf("take source %s out of %s: %w", name, stream, err)
	}
	return addStreamSource(ctx, t.js, stream, src)
}
