package webhooks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/jetstream"
)

// A webhook of every agent in a multi-region deployment delivers each
// region's events from that region's own event stream, where they are
// stored first, so a region that is down (the origin included) stops only
// its own part of the deliveries:
//
//   - its consumer on the gathered log (subscription.Stream, the origin's
//     MESH_EVENTS) delivers the origin's own events, and skips the copies
//     it holds of other regions' events that a part delivers;
//   - a part is its consumer on another region's stream (one worker each),
//     made with the webhook for every region then listed, and added by
//     addParts for a region listed later (a region that joined, or was
//     unreachable then) and for webhooks made by versions before parts.
//
// A part added to a standing webhook is cut by sequence, so no event is
// delivered twice or lost: the part's record is written first without its
// start (pending), then its consumer is made from the region's stream's
// next sequence, From, which the record then keeps. The consumer on the
// gathered log delivers a copy of that region's event whose sequence in
// its own stream is below From (its part never sees it) and skips it from
// From on; a copy that comes while the part is pending waits (it is
// offered again shortly). Whether a copy may be delivered is decided after
// it is received, from the record as its owner keeps it: a copy of an
// event stored after From was chosen is received after the record said
// pending, so it is never delivered by both.

// part is a webhook's consumer on one more region's event stream.
type part struct {
	Region string `json:"region"`
	Stream string `json:"stream"`
	// From is the first sequence of Stream the part's consumer delivers:
	// the consumer on the gathered log skips the copies of Stream's events
	// from there on. 1 for a part made with its webhook (copies of events
	// from before are not the webhook's); 0 while the part is being added.
	From uint64 `json:"from,omitempty"`
}

// partsInterval is how often the service looks for regions whose event
// stream a webhook of every agent does not read yet.
const partsInterval = 5 * time.Second

// partTry bounds one attempt to make a part's consumer: a region that does
// not answer is left for the next round.
const partTry = 5 * time.Second

// copyWait is how long a copy of an event of a region whose part is being
// added waits before it is offered again.
const copyWait = time.Second

// errPartPending says that a part's start is not decided yet.
var errPartPending = errors.New("the webhook's part on that region's stream is being added")

// createEveryAgent makes the consumers of a new webhook of every agent in
// a multi-region deployment: the one on the gathered log, and a part on
// each other region's stream (createParts). While the origin does not
// answer, the one on the gathered log is left to the webhook's workers
// (subscription.GatheredFrom), so a webhook of every agent can be made in
// any region that is up.
func (s *Service) createEveryAgent(ctx context.Context, sub *subscription, deliver jetstream.DeliverPolicy, start *time.Time) error {
	gctx, cancel := context.WithTimeout(ctx, partTry)
	err := s.createConsumer(gctx, sub, sub.stream(), deliver, start)
	cancel()
	if err != nil {
		sctx, cancel := context.WithTimeout(ctx, partTry)
		_, serr := s.js.Stream(sctx, sub.stream())
		cancel()
		if serr == nil {
			return err
		}
		from := sub.CreatedAt
		if start != nil {
			from = *start
		}
		sub.GatheredFrom = &from
		s.cfg.Logger.Warn().Err(serr).Str("webhook_id", sub.ID).Msg("the origin does not answer: the webhook's consumer on its gathered log is made once it does")
	}
	s.createParts(ctx, sub, deliver, start)
	return nil
}

// makeGathered makes the consumer on the gathered log of a webhook of
// every agent made while the origin did not answer, from the time its
// record keeps, and clears that time (a consumer lost afterwards is made
// again from the last event delivered, as any).
func (s *Service) makeGathered(ctx context.Context, sub *subscription) error {
	if err := s.createConsumer(ctx, sub, sub.stream(), jetstream.DeliverByStartTimePolicy, sub.GatheredFrom); err != nil {
		return err
	}
	if _, _, err := s.subs.Modify(ctx, sub.ID, func(cur *subscription) error {
		cur.GatheredFrom = nil
		return nil
	}); err != nil {
		return err
	}
	s.cfg.Logger.Info().Str("webhook_id", sub.ID).Time("from", *sub.GatheredFrom).Msg("webhook's consumer on the gathered log made now that the origin answers")
	return nil
}

// createParts makes, for a new webhook of every agent, its consumer on the
// event stream of each region listed but the origin, starting as its
// consumer on the gathered log does. A region that does not answer is left
// to addParts.
func (s *Service) createParts(ctx context.Context, sub *subscription, deliver jetstream.DeliverPolicy, start *time.Time) {
	if s.dir == nil {
		return
	}
	streams, err := s.dir.EventStreams(ctx, s.js)
	if err != nil {
		s.cfg.Logger.Warn().Err(err).Str("webhook_id", sub.ID).Msg("regions' event streams not listed; their parts are added later")
		return
	}
	for _, rs := range streams {
		if rs.Stream == sub.stream() {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, partTry)
		err := s.createConsumer(pctx, sub, rs.Stream, deliver, start)
		cancel()
		if err != nil {
			s.cfg.Logger.Warn().Err(err).Str("webhook_id", sub.ID).Str("region", rs.Region).Msg("webhook's part in a region not made; added later")
			continue
		}
		sub.Parts = append(sub.Parts, part{Region: rs.Region, Stream: rs.Stream, From: 1})
	}
}

// addParts adds to every webhook of every agent the parts it lacks on the
// event streams of the regions listed (see the comment at the top).
func (s *Service) addParts(ctx context.Context) {
	s.mu.Lock()
	var subs []*subscription
	for _, sub := range s.latest {
		if sub.everyAgent() {
			subs = append(subs, sub)
		}
	}
	s.mu.Unlock()
	if len(subs) == 0 {
		return
	}
	streams, err := s.dir.EventStreams(ctx, s.js)
	if err != nil {
		s.cfg.Logger.Warn().Err(err).Msg("regions' event streams not listed")
		return
	}
	for _, sub := range subs {
		for _, rs := range streams {
			if rs.Stream == sub.stream() {
				continue
			}
			if p := sub.part(rs.Stream); p != nil && p.From > 0 {
				continue
			}
			err := s.addPart(ctx, sub.ID, rs)
			s.mu.Lock()
			if err != nil {
				if s.unaddable[sub.ID] == nil {
					s.unaddable[sub.ID] = map[string]bool{}
				}
				s.unaddable[sub.ID][rs.Region] = true
			} else {
				delete(s.unaddable[sub.ID], rs.Region)
			}
			s.mu.Unlock()
			if err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn().Err(err).Str("webhook_id", sub.ID).Str("region", rs.Region).Msg("webhook's part in a region not added yet")
			}
		}
	}
}

// addPart adds webhook id's part on rs's stream: pending, then its
// consumer, then its start (see the comment at the top). Another process
// adding the same part at once ends with the same consumer and start.
func (s *Service) addPart(ctx context.Context, id string, rs bus.RegionStream) error {
	ctx, cancel := context.WithTimeout(ctx, partTry)
	defer cancel()
	// The region's stream answers before the gathered log's copies of its
	// events are held for the part.
	if _, err := s.js.Stream(ctx, rs.Stream); err != nil {
		return fmt.Errorf("event stream %s: %w", rs.Stream, err)
	}
	cur, rev, err := s.subs.Latest(ctx, id)
	if errors.Is(err, mesh.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if p := cur.part(rs.Stream); p != nil && p.From > 0 {
		return nil
	} else if p == nil {
		next := *cur
		next.Parts = append(slices.Clone(cur.Parts), part{Region: rs.Region, Stream: rs.Stream})
		if rev, err = s.subs.Update(ctx, id, &next, rev); errors.Is(err, mesh.ErrConflict) {
			return nil // changed meanwhile: the next round looks again
		} else if err != nil {
			return err
		}
		cur = &next
	}
	from, err := s.partStart(ctx, cur, rs.Stream)
	if err != nil {
		return err
	}
	next := *cur
	next.Parts = slices.Clone(cur.Parts)
	next.part(rs.Stream).From = from
	if _, err := s.subs.Update(ctx, id, &next, rev); err != nil {
		// Changed meanwhile (another process added the part: its consumer
		// is this one) or deleted: a deleted webhook's consumer goes.
		if _, _, gerr := s.subs.Latest(ctx, id); errors.Is(gerr, mesh.ErrNotFound) {
			_ = s.js.DeleteConsumer(context.WithoutCancel(ctx), rs.Stream, bus.WebhookConsumer(id))
			return nil
		}
		if errors.Is(err, mesh.ErrConflict) {
			return nil
		}
		return err
	}
	s.cfg.Logger.Info().Str("webhook_id", id).Str("region", rs.Region).Uint64("from", from).Msg("webhook reads a region's own event stream")
	return nil
}

// partStart makes the consumer of sub's part on stream from the stream's
// next sequence, and returns it; a consumer made before (by another
// process) keeps its start.
func (s *Service) partStart(ctx context.Context, sub *subscription, stream string) (uint64, error) {
	for range 2 {
		cons, err := s.js.Consumer(ctx, stream, bus.WebhookConsumer(sub.ID))
		if err == nil {
			return max(cons.CachedInfo().Config.OptStartSeq, 1), nil
		}
		if !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return 0, err
		}
		info, err := s.js.Stream(ctx, stream)
		if err != nil {
			return 0, err
		}
		from := info.CachedInfo().State.LastSeq + 1
		cfg := consumerConfig(sub)
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
		_, err = s.js.CreateConsumer(ctx, stream, cfg)
		if err == nil {
			return from, nil
		}
		if !errors.Is(err, jetstream.ErrConsumerExists) {
			return 0, fmt.Errorf("webhook consumer: %w", err)
		}
	}
	return 0, fmt.Errorf("webhook consumer on %s: made and gone at once", stream)
}

// skipCopy decides, for an event the consumer on the gathered log of a
// webhook of every agent received, whether it is a copy of another
// region's event that a part delivers: then it is acked (settled), or,
// while that part is being added, offered again shortly (not settled).
func (s *Service) skipCopy(ctx context.Context, w *worker, msg jetstream.Msg) (skip, settled bool) {
	sub := w.sub
	if !sub.everyAgent() || w.stream != sub.stream() || !bus.IsSourced(msg.Headers()) {
		return false, false
	}
	stream, seq, ok := sourcedFrom(msg.Headers().Get(bus.SourcedHeader))
	if !ok {
		return false, false
	}
	from, err := s.partFrom(ctx, sub.ID, stream)
	switch {
	case err != nil:
		_ = msg.NakWithDelay(copyWait)
		return true, false
	case from > 0 && seq >= from:
		_ = msg.Ack()
		return true, true
	}
	return false, false
}

// sourcedFrom reads the stream and sequence a copy was taken from out of
// its Nats-Stream-Source header ("<stream> <sequence> …").
func sourcedFrom(h string) (string, uint64, bool) {
	fields := strings.Fields(h)
	if len(fields) < 2 {
		return "", 0, false
	}
	stream, _, _ := strings.Cut(fields[0], ":")
	seq, err := strconv.ParseUint(fields[1], 10, 64)
	return stream, seq, err == nil
}

// partFrom returns the first sequence of stream that webhook id's part on
// it delivers: 0 when it has no part there, errPartPending while it is
// being added. A start not known yet is read from the record as its owner
// keeps it.
func (s *Service) partFrom(ctx context.Context, id, stream string) (uint64, error) {
	s.mu.Lock()
	from := s.froms[id][stream]
	s.mu.Unlock()
	if from > 0 {
		return from, nil
	}
	cur, _, err := s.subs.Latest(ctx, id)
	if err != nil {
		return 0, err
	}
	p := cur.part(stream)
	switch {
	case p == nil:
		return 0, nil
	case p.From == 0:
		return 0, errPartPending
	}
	s.mu.Lock()
	s.knowFrom(id, stream, p.From)
	s.mu.Unlock()
	return p.From, nil
}

// knowFrom keeps the start of a part; s.mu is held.
func (s *Service) knowFrom(id, stream string, from uint64) {
	if s.froms[id] == nil {
		s.froms[id] = map[string]uint64{}
	}
	s.froms[id][stream] = from
}

// unreachable names the regions whose part of sub this process cannot
// reach now: its workers that cannot reach their consumer, and the parts
// that could not be added. Nil on a server in no cluster.
func (s *Service) unreachable(ctx context.Context, sub *subscription) []string {
	if s.dir == nil {
		return nil
	}
	var regions []string
	s.mu.Lock()
	var down []string
	for _, w := range s.workers {
		if w.sub.ID == sub.ID && w.down.Load() {
			down = append(down, w.stream)
		}
	}
	for region := range s.unaddable[sub.ID] {
		regions = append(regions, region)
	}
	s.mu.Unlock()
	for _, stream := range down {
		if p := sub.part(stream); p != nil {
			regions = append(regions, p.Region)
		} else if region, err := bus.EventStreamRegion(ctx, s.js, stream); err == nil {
			regions = append(regions, region)
		}
	}
	slices.Sort(regions)
	return slices.Compact(regions)
}

// deliveryID names a delivery of sub's consumer on stream: the event's
// sequence in it, prefixed with its region and a colon for a part.
func deliveryID(sub *subscription, stream string, seq uint64) string {
	id := strconv.FormatUint(seq, 10)
	if p := sub.part(stream); p != nil && stream != sub.stream() {
		return p.Region + ":" + id
	}
	return id
}

// delivery reads a delivery id: the stream it is of, and the sequence.
func (s *subscription) delivery(id string) (stream string, seq uint64, ok bool) {
	stream = s.stream()
	if region, rest, found := strings.Cut(id, ":"); found {
		i := slices.IndexFunc(s.Parts, func(p part) bool { return p.Region == region && p.From > 0 })
		if i < 0 {
			return "", 0, false
		}
		stream, id = s.Parts[i].Stream, rest
	}
	seq, err := strconv.ParseUint(id, 10, 64)
	return stream, seq, err == nil
}
