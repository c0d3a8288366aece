package gateway

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/runfollow"
	"github.com/a2amesh/a2amesh/mesh"
)

// Every agent's events, in a deployment of several regions, are read where
// each is stored first: in each region's own event stream, so a stream goes
// on with the regions that are up while another is down, the origin
// included. The origin's stream also holds copies of the other regions'
// events (its gathered log); they are skipped there. An event's id names
// the position reached in every region's stream
// ("east:1200,south:88,west:1842"), so a client that reconnects with it
// resumes in each. Which regions cannot be read is said in comment lines
// (": unreachable_regions east"), when the stream opens and when it
// changes; a region's part is tried again until it answers.

// regionsEventID is the id of an event of a stream of every region: the
// position in each region's stream, sorted by region.
func regionsEventID(pos map[string]uint64) string {
	regions := make([]string, 0, len(pos))
	for r := range pos {
		regions = append(regions, r)
	}
	slices.Sort(regions)
	var b strings.Builder
	for i, r := range regions {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(r)
		b.WriteByte(':')
		b.WriteString(strconv.FormatUint(pos[r], 10))
	}
	return b.String()
}

// maxIDRegions bounds the regions an event id may name, so a forged id
// costs bounded work.
const maxIDRegions = 64

// parseRegionsEventID reads an id regionsEventID made (or the id of one
// region's stream, "west:1842"): each region once.
func parseRegionsEventID(id string) (map[string]uint64, error) {
	refused := mesh.Errorf(mesh.CodeInvalidRequest, "Last-Event-ID must be an event id from this stream")
	if strings.Count(id, ",") >= maxIDRegions {
		return nil, refused
	}
	pos := map[string]uint64{}
	for _, part := range strings.Split(id, ",") {
		region, seqText, ok := strings.Cut(part, ":")
		seq, err := strconv.ParseUint(seqText, 10, 64)
		if _, again := pos[region]; !ok || err != nil || again || bus.ValidRegion(region) != nil {
			return nil, refused
		}
		pos[region] = seq
	}
	return pos, nil
}

// regionRetry bounds the wait before a region's part of a stream of every
// region is tried again.
const regionRetry = 5 * time.Second

// regionOpenWait bounds how long a stream's opening waits for a region's
// part before it names the region unreachable.
const regionOpenWait = 2 * time.Second

// regionEvent is an event read in one region's stream.
type regionEvent struct {
	region string
	stream string
	e      *runfollow.Event
}

// everyRegion reads the events of a set of subjects in every region's
// stream.
type everyRegion struct {
	g        *Gateway
	subjects []string
	out      chan regionEvent

	mu sync.Mutex
	// unreachable names the regions whose part does not read now;
	// changed is set when it changed since it was last said.
	unreachable map[string]bool
	changed     bool
	wake        chan struct{}
}

// followEveryRegion starts reading subjects in every region's stream: from
// after the positions of pos for the regions it names, else from since, or
// with new events only when since is nil. It returns
// once every region's part was opened or found unreachable, with the
// starting position of each region whose part opened with new events only.
func (g *Gateway) followEveryRegion(ctx context.Context, subjects []string, pos map[string]uint64, since *time.Time) (*everyRegion, map[string]uint64, error) {
	lctx, cancel := context.WithTimeout(ctx, regionOpenWait)
	streams, err := g.homes.EventStreams(lctx, g.js)
	cancel()
	if err != nil {
		return nil, nil, err
	}
	er := &everyRegion{g: g, subjects: subjects, out: make(chan regionEvent), unreachable: map[string]bool{}, wake: make(chan struct{}, 1)}
	started := map[string]uint64{}
	opened := sync.WaitGroup{}
	var mu sync.Mutex
	for _, rs := range streams {
		start := runfollow.Position{}
		seq, resumed := pos[rs.Region]
		switch {
		case resumed:
			start = runfollow.After(seq)
		case since != nil:
			start = runfollow.Since(*since)
		}
		opened.Add(1)
		go er.follow(ctx, rs, start, resumed || since != nil, func(first uint64, ok bool) {
			if ok && !resumed && since == nil {
				mu.Lock()
				started[rs.Region] = first
				mu.Unlock()
			}
			opened.Done()
		})
	}
	opened.Wait()
	return er, started, nil
}

// follow reads one region's part until ctx ends, opening it again when it
// fails. opened is called once, when the first opening succeeded or
// failed, with the sequence it starts after when it starts with new events
// only (positioned false): that region's last sequence, taken then, so the
// stream's ids name a position in it from the start. A part that starts
// with new events only and cannot be opened then starts, once it can, with
// the events stored since the stream opened, so it misses nothing.
func (er *everyRegion) follow(ctx context.Context, rs bus.RegionStream, start runfollow.Position, positioned bool, opened func(first uint64, ok bool)) {
	defer func() {
		if opened != nil {
			opened(0, false)
		}
	}()
	src := er.g.runs.Stream(rs.Stream)
	openedAt := time.Now()
	for try := 0; ctx.Err() == nil; try++ {
		f, first, err := er.open(ctx, src, &start, positioned)
		if opened != nil {
			opened(first, err == nil)
			opened = nil
		}
		if !positioned {
			if err != nil {
				start = runfollow.Since(openedAt)
			}
			positioned = true
		}
		er.reachable(rs.Region, err == nil)
		if err == nil {
			start = er.read(ctx, f, rs, start)
			f.Stop()
			if ctx.Err() != nil {
				return
			}
			er.reachable(rs.Region, false)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(time.Duration(try+1)*time.Second, regionRetry)):
		}
	}
}

// open opens one region's part from *start, or with new events only when
// the start is not positioned yet (then *start becomes the position after
// the region's last sequence, returned as first).
func (er *everyRegion) open(ctx context.Context, src *runfollow.Source, start *runfollow.Position, positioned bool) (*runfollow.Follower, uint64, error) {
	octx, cancel := context.WithTimeout(ctx, regionOpenWait)
	defer cancel()
	var first uint64
	if !positioned {
		last, err := src.LastSeq(octx)
		if err != nil {
			return nil, 0, err
		}
		*start, first = runfollow.After(last), last
	}
	f, err := src.Follow(octx, er.subjects, *start)
	return f, first, err
}

// read hands on the events f reads until it fails, skipping the copies of
// other regions' events in the origin's stream; it returns the position
// after the last event read.
func (er *everyRegion) read(ctx context.Context, f *runfollow.Follower, rs bus.RegionStream, start runfollow.Position) runfollow.Position {
	for {
		e, err := f.Next(ctx)
		if err != nil {
			return start
		}
		start = runfollow.After(e.Seq)
		if rs.SkipSourced && bus.IsSourced(e.Header) {
			continue
		}
		select {
		case er.out <- regionEvent{region: rs.Region, stream: rs.Stream, e: e}:
		case <-ctx.Done():
			return start
		}
	}
}

// reachable records whether a region's part reads.
func (er *everyRegion) reachable(region string, ok bool) {
	er.mu.Lock()
	defer er.mu.Unlock()
	if er.unreachable[region] == !ok {
		return
	}
	if ok {
		delete(er.unreachable, region)
	} else {
		er.unreachable[region] = true
	}
	er.changed = true
	select {
	case er.wake <- struct{}{}:
	default:
	}
}

// unreachableNow names the regions whose part does not read, sorted, and
// whether that changed since it was last asked.
func (er *everyRegion) unreachableNow() ([]string, bool) {
	er.mu.Lock()
	defer er.mu.Unlock()
	changed := er.changed
	er.changed = false
	names := make([]string, 0, len(er.unreachable))
	for r := range er.unreachable {
		names = append(names, r)
	}
	slices.Sort(names)
	return names, changed
}

// everyRegionStart says whether a GET /events request reads every region's
// stream (every agent's events, in a deployment of several regions, not
// resuming from an id of the gathered log an earlier version sent), and
// from where: the positions its Last-Event-ID names, or since.
func (g *Gateway) everyRegionStart(r *http.Request, f *eventFilter) (pos map[string]uint64, since *time.Time, ok bool, err error) {
	if f.agentID != "" || g.cfg.Conn.NC.ConnectedClusterName() == "" {
		// One agent's events, or a server in no cluster: one stream.
		return nil, nil, false, nil
	}
	if last := lastEventID(r); last != "" {
		if !strings.Contains(last, ":") {
			return nil, nil, false, nil
		}
		pos, err = parseRegionsEventID(last)
		return pos, nil, err == nil, err
	}
	if since, err = parseSince(r); err != nil {
		return nil, nil, false, err
	}
	return map[string]uint64{}, since, true, nil
}

// serveEveryRegion serves GET /events of every agent in a deployment of
// several regions.
func (g *Gateway) serveEveryRegion(w http.ResponseWriter, r *http.Request, f *eventFilter, pos map[string]uint64, since *time.Time) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	er, started, err := g.followEveryRegion(ctx, f.subjects(), pos, since)
	if err != nil {
		g.writeError(w, r, fmt.Errorf("follow events: %w", err))
		return
	}
	for region, seq := range started {
		pos[region] = seq
	}
	rc := startEventStream(w)
	sayRegions := func() bool {
		if names, changed := er.unreachableNow(); changed {
			return sendComment(w, rc, "unreachable_regions "+strings.Join(names, " "))
		}
		return true
	}
	if !sayRegions() {
		return
	}
	pumpEvents(g, ctx, w, rc, er.out, er.wake, sayRegions, func(ev regionEvent) error {
		pos[ev.region] = ev.e.Seq
		e := g.sse.of(ev.stream).get(r.Context(), ev.e)
		if !e.ok || !f.match(e.typ, e.data) {
			return nil
		}
		_, err := fmt.Fprintf(w, "id: %s\ndata: %s\n\n", regionsEventID(pos), e.body)
		return err
	})
}
