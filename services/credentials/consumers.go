package credentials

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/internal/listing"
	"github.com/nats-io/nats.go/jetstream"
)

// consumerRecord is an event consumer credential as stored under
// consumerKey(id); a record holding only the id, under consumerHashKey(hash),
// finds it from its credential.
type consumerRecord struct {
	ID        string           `json:"consumer_id"`
	Name      string           `json:"name"`
	AgentID   string           `json:"agent_id,omitempty"`
	Kinds     []mesh.EventKind `json:"kinds,omitempty"`
	Types     []string         `json:"types,omitempty"`
	TokenHash string           `json:"token_hash"`
	CreatedAt time.Time        `json:"created_at"`
	// Stream is the event stream its durable consumer reads: for one
	// agent's events, the stream of the agent's home region, so reading
	// them needs that region alone; for every agent's, the gathered log
	// (bus.EventStream). Empty in credentials made before: the gathered log.
	Stream string `json:"stream,omitempty"`
	// Streams are, for every agent's events in a deployment of several
	// regions, each region's event stream, each with a durable consumer
	// like Stream's (the origin's is Stream).
	Streams []bus.RegionStream `json:"streams,omitempty"`
}

// streams names every stream the credential has a durable consumer on.
func (c *consumerRecord) streams() []string {
	names := []string{c.stream()}
	for _, rs := range c.Streams {
		if !slices.Contains(names, rs.Stream) {
			names = append(names, rs.Stream)
		}
	}
	return names
}

// stream names the event stream the credential's durable consumer reads.
func (c *consumerRecord) stream() string {
	if c.Stream == "" {
		return bus.EventStream
	}
	return c.Stream
}

func consumerKey(id string) string       { return "consumer." + id }
func consumerHashKey(hash string) string { return "hash." + hash }

// subjects are the event subjects the credential may read: its agent's (or
// every agent's), narrowed to the kinds of its types.
func (c *consumerRecord) subjects() []string {
	if len(c.Kinds) == 0 {
		if c.AgentID == "" {
			return bus.EventStreamSubjects()
		}
		return []string{bus.AgentEventsFilter(c.AgentID)}
	}
	out := make([]string, 0, len(c.Kinds))
	for _, k := range c.Kinds {
		out = append(out, bus.EventFilter(c.AgentID, string(k), ""))
	}
	return out
}

func (c *consumerRecord) view() meshapi.Consumer {
	return meshapi.Consumer{
		ConsumerID: c.ID, Name: c.Name, AgentID: c.AgentID, Types: c.Types, Subjects: c.subjects(), LiveUser: bus.LiveEventsUser,
		DurableName: bus.ConsumerNameBase(c.ID), JSAPIPrefix: bus.JetStreamAPIPrefix, InboxPrefix: bus.ConsumerInboxPrefix(c.ID),
		Stream: c.stream(), Streams: c.Streams, CreatedAt: c.CreatedAt,
	}
}

func (s *Service) handleConsumerCreate(ctx context.Context, in *meshapi.CreateConsumerRequest) (*meshapi.CreateConsumerResponse, error) {
	rec, err := s.newConsumer(ctx, in)
	if err != nil {
		return nil, err
	}
	// The credential's one JetStream consumer is made here, not by its
	// holder: a consumer's configuration names subjects in the platform's
	// account (a push delivery subject), which no untrusted client may choose.
	if err := s.createEventConsumer(ctx, rec); err != nil {
		return nil, err
	}
	token := secret.NewToken(secret.PrefixConsumer)
	rec.TokenHash = secret.Hash(token)
	// The hash is written first: a listed consumer always has a credential.
	if _, err := s.consumers.Put(ctx, consumerHashKey(rec.TokenHash), &consumerRecord{ID: rec.ID}); err != nil {
		return nil, err
	}
	if _, err := s.consumers.Create(ctx, consumerKey(rec.ID), rec); err != nil {
		return nil, err
	}
	return &meshapi.CreateConsumerResponse{Consumer: rec.view(), Credential: token, NATSURL: s.cfg.NATSURL}, nil
}

// newConsumer validates a create request into a record.
func (s *Service) newConsumer(ctx context.Context, in *meshapi.CreateConsumerRequest) (*consumerRecord, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" || len(name) > 200 || !utf8.ValidString(name) {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "name is required (at most 200 bytes)")
	}
	rec := &consumerRecord{ID: mesh.NewID(), Name: name, CreatedAt: time.Now().UTC()}
	if in.AgentID != "" {
		a, err := s.findAgent(ctx, in.AgentID)
		if err != nil {
			return nil, err
		}
		rec.AgentID = in.AgentID
		// Its events are read where they are stored first, in the agent's
		// home region, which alone then serves them.
		if rec.Stream, err = bus.ReadersEventStream(ctx, s.cfg.Conn.JS, a.HomeRegion); err != nil {
			return nil, err
		}
	} else if streams, err := bus.RegionStreams(ctx, s.cfg.Conn.JS, s.serviceRegions()); err != nil {
		return nil, err
	} else if len(streams) > 0 && streams[0].Region != "" {
		rec.Streams = streams
	}
	for _, t := range in.Types {
		full := t
		if !strings.HasPrefix(full, mesh.EventTypePrefix) {
			full = mesh.EventTypePrefix + full
		}
		kind, ok := kindOf(full)
		if !ok {
			return nil, mesh.Errorf(mesh.CodeInvalidRequest, "unknown event type %q", t)
		}
		if !slices.Contains(rec.Types, full) {
			rec.Types = append(rec.Types, full)
		}
		if !slices.Contains(rec.Kinds, kind) {
			rec.Kinds = append(rec.Kinds, kind)
		}
	}
	return rec, nil
}

func kindOf(eventType string) (mesh.EventKind, bool) {
	e, ok := mesh.LookupEventType(eventType)
	return e.Kind, ok
}

func (s *Service) handleConsumerList(ctx context.Context, in *meshapi.ListConsumersRequest) (*meshapi.ConsumerList, error) {
	all, err := listing.All(ctx, s.consumers, consumerKey("*"), (*consumerRecord).view,
		func(c *meshapi.Consumer) string { return c.ConsumerID })
	if err != nil {
		return nil, err
	}
	return &meshapi.ConsumerList{Consumers: all}, nil
}

func (s *Service) handleConsumerDelete(ctx context.Context, in *meshapi.DeleteConsumerRequest) (*meshapi.Empty, error) {
	if !mesh.ValidID(in.ConsumerID) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "consumer %q not found", in.ConsumerID)
	}
	rec, rev, err := s.consumers.Latest(ctx, consumerKey(in.ConsumerID))
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "consumer %s not found", in.ConsumerID)
	}
	if err != nil {
		return nil, err
	}
	// The credential goes first: from then on the callout refuses it.
	if err := s.consumers.Delete(ctx, consumerHashKey(rec.TokenHash), 0); err != nil {
		return nil, err
	}
	if err := s.consumers.Delete(ctx, consumerKey(rec.ID), rev); err != nil && !errors.Is(err, mesh.ErrConflict) {
		return nil, err
	}
	s.disconnect(bus.AccountConsumers, bus.ConsumerUserName(rec.ID))
	s.disconnect(bus.AccountLiveEvents, bus.ConsumerUserName(rec.ID))
	for _, stream := range rec.streams() {
		if err := s.cfg.Conn.JS.DeleteConsumer(ctx, stream, bus.ConsumerNameBase(rec.ID)); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, err
		}
	}
	return nil, nil
}

// consumerWidenInterval is how often a credentials service looks for
// event streams a consumer credential should read and does not.
const consumerWidenInterval = 5 * time.Second

// widenConsumers gives each consumer credential a durable consumer on the
// event streams it should read and has none on, and lists them in its
// streams: for a credential of every agent, the stream of each region
// that joined since it was made (or answered nothing then); for one of
// one agent, the stream of the agent's home region once the agent moved
// there (the agent's events are stored there from then on; a move needs
// the agent to have no open run). Each is read from the start of its
// retention window, as at creation. Its holder learns of it from
// GET /consumers, and may read it once it connects again (a connection's
// permissions are those of its credential as it connected). A region that
// does not answer is tried at the next round; two services doing it at
// once make the same consumer, and one changes the record.
func (s *Service) widenConsumers(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, consumerWidenInterval)
	defer cancel()
	every, err := bus.RegionStreams(lctx, s.cfg.Conn.JS, s.serviceRegions())
	if err != nil || len(every) == 0 || every[0].Region == "" {
		return
	}
	lister, err := s.consumers.KV().ListKeysFiltered(lctx, consumerKey("*"))
	if err != nil {
		return
	}
	for key := range lister.Keys() {
		// Looked at in this region's copy; the owner's record is read only
		// for a credential that lacks a stream.
		rec, _, err := s.consumers.Get(lctx, key)
		if err != nil {
			continue
		}
		if missing := s.missingStreams(lctx, rec, every); len(missing) > 0 {
			s.widen(lctx, key, missing)
		}
	}
}

// widen gives the credential stored under key a durable consumer on each
// of streams and lists them in its streams (a compare-and-set on the
// owner's record: of two services doing it at once, one changes it).
func (s *Service) widen(ctx context.Context, key string, streams []bus.RegionStream) {
	rec, rev, err := s.consumers.Latest(ctx, key)
	if err != nil {
		return
	}
	widened := *rec
	for _, rs := range streams {
		if slices.Contains(widened.streams(), rs.Stream) {
			continue
		}
		if err := s.createOneEventConsumer(ctx, rec, rs.Stream); err != nil {
			continue
		}
		if len(widened.Streams) == 0 && rec.AgentID != "" {
			// The stream it was made on comes first.
			region, _ := bus.EventStreamRegion(ctx, s.cfg.Conn.JS, rec.stream())
			widened.Streams = []bus.RegionStream{{Region: region, Stream: rec.stream(), SkipSourced: rec.stream() == bus.EventStream}}
		}
		widened.Streams = append(slices.Clone(widened.Streams), rs)
	}
	if len(widened.Streams) == len(rec.Streams) {
		return
	}
	if _, err := s.consumers.Update(ctx, key, &widened, rev); err == nil {
		s.cfg.Logger.Info().Str("consumer_id", rec.ID).Int("streams", len(widened.Streams)).Msg("consumer credential reads one more event stream")
	}
}

// missingStreams names the event streams a credential should read now and
// does not: of every region's, for a credential of every agent made in a
// deployment of several regions; its agent's home region's, for one of one
// agent that moved (none while the agent cannot be read). It asks a server
// only for a stream the credential lacks.
func (s *Service) missingStreams(ctx context.Context, rec *consumerRecord, every []bus.RegionStream) []bus.RegionStream {
	have := rec.streams()
	if rec.AgentID == "" {
		if len(rec.Streams) == 0 {
			return nil // made on a server in no cluster, or by an earlier version: the gathered log
		}
		return slices.DeleteFunc(slices.Clone(every), func(rs bus.RegionStream) bool { return slices.Contains(have, rs.Stream) })
	}
	a, err := s.findAgent(ctx, rec.AgentID)
	if err != nil || a.HomeRegion == "" {
		return nil
	}
	if name, err := bus.EventStreamIn(ctx, s.cfg.Conn.JS, a.HomeRegion); err != nil || slices.Contains(have, name) {
		return nil
	}
	stream, err := bus.ReadersEventStream(ctx, s.cfg.Conn.JS, a.HomeRegion)
	if err != nil || slices.Contains(have, stream) {
		return nil
	}
	return []bus.RegionStream{{Region: a.HomeRegion, Stream: stream, SkipSourced: stream == bus.EventStream}}
}

// createEventConsumer makes the credential's durable pull consumer on each
// of its event streams, from the start of the retention window, filtered
// to the credential's subjects. A stream that does not answer (its region
// is down) fails the whole: those made are deleted again.
func (s *Service) createEventConsumer(ctx context.Context, rec *consumerRecord) error {
	var made []string
	for _, stream := range rec.streams() {
		if err := s.createOneEventConsumer(ctx, rec, stream); err != nil {
			for _, m := range made {
				_ = s.cfg.Conn.JS.DeleteConsumer(context.WithoutCancel(ctx), m, bus.ConsumerNameBase(rec.ID))
			}
			if region, rerr := bus.EventStreamRegion(ctx, s.cfg.Conn.JS, stream); rerr == nil && region != "" && !errors.Is(err, context.Canceled) {
				return mesh.Errorf(mesh.CodeUnavailable, "region %s cannot be reached (its event stream: %v); send it again later", region, err)
			}
			return fmt.Errorf("event consumer for credential %s: %w", rec.ID, err)
		}
		made = append(made, stream)
	}
	return nil
}

// createOneEventConsumer makes the credential's durable pull consumer on
// one stream (the same configuration made again is no error).
func (s *Service) createOneEventConsumer(ctx context.Context, rec *consumerRecord, stream string) error {
	_, err := s.cfg.Conn.JS.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Durable:        bus.ConsumerNameBase(rec.ID),
		Description:    "events for consumer credential " + rec.ID,
		FilterSubjects: rec.subjects(),
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
	})
	return err
}

// authenticateConsumer resolves a consumer credential to its record.
func (s *Service) authenticateConsumer(ctx context.Context, token string) (*consumerRecord, error) {
	hash := secret.Hash(token)
	refused := mesh.Errorf(mesh.CodeUnauthorized, "invalid or revoked consumer credential")
	ref, _, err := s.consumers.Get(ctx, consumerHashKey(hash))
	if err != nil {
		return nil, unlessUnreadable(err, refused)
	}
	rec, _, err := s.consumers.Get(ctx, consumerKey(ref.ID))
	if err != nil {
		return nil, unlessUnreadable(err, refused)
	}
	if !secret.Equal(rec.TokenHash, hash) {
		return nil, refused
	}
	return rec, nil
}
