package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/internal/tracing"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Event is a fact a service publishes. It becomes a CloudEvent 1.0 on
// EventSubject(AgentID, Kind, Subject).
type Event struct {
	// Type is one of the mesh.Event* types.
	Type string
	// Kind is the kind of entity the event is about.
	Kind mesh.EventKind
	// AgentID owns the entity; it is a subject token so a consumer can be
	// confined to one agent's events.
	AgentID string
	// Subject is the entity id (CloudEvent subject).
	Subject string
	// ID is the CloudEvent id and the JetStream dedupe id. Give a deterministic
	// one (entity id + revision) where a retried publish must not duplicate.
	ID string
	// Sequence orders events of one entity (the record revision), carried in
	// the CloudEvents "sequence" extension.
	Sequence uint64
	// Data is marshalled as JSON.
	Data any
	// Time defaults to now.
	Time time.Time
	// Region, when set in a deployment of several regions, is the region
	// whose event stream stores the event, instead of the publisher's: an
	// event about an agent is stored in the agent's home region, where the
	// webhooks and consumer credentials of that agent read. When that
	// region's stream does not take it (the region is down), it is stored
	// in the publisher's region, whose events the origin gathers too.
	Region string
}

// Publisher publishes events from one service.
type Publisher struct {
	js        jetstream.JetStream
	source    string
	published func(eventType string)
	// stream is the event stream, once looked up (lastEvent).
	streamMu sync.Mutex
	stream   jetstream.Stream
}

// NewPublisher returns a publisher whose events carry source "urn:a2amesh:<service>".
func NewPublisher(js jetstream.JetStream, service string) *Publisher {
	return &Publisher{js: js, source: "urn:a2amesh:" + service}
}

// Publish stores the event in the event stream and waits for the stream to
// acknowledge it, so events published one after another are stored in order.
func (p *Publisher) Publish(ctx context.Context, ev Event) error {
	msg, err := p.encode(ctx, ev)
	if err != nil {
		return err
	}
	// Stored through this region's event stream, which keeps it under
	// msg's subject; then published there for live subscribers, once
	// stored.
	own := eventRegion(p.js)
	region := own
	if ev.Region != "" && connRegion(p.js) != "" {
		region = ev.Region
	}
	store := func(region string) error {
		stored := &nats.Msg{Subject: RegionEventSubject(region, ev.AgentID, string(ev.Kind), ev.Subject), Header: msg.Header, Data: msg.Data}
		_, err := p.js.PublishMsg(ctx, stored, jetstream.WithMsgID(msg.Header.Get(ceHeaderPrefix+"id")))
		return err
	}
	err = store(region)
	if err != nil && region != own && ctx.Err() == nil {
		err = store(own)
	}
	if err != nil {
		return fmt.Errorf("publish %s %s: %w", ev.Type, ev.Subject, err)
	}
	if nc := p.js.Conn(); nc != nil {
		_ = nc.PublishMsg(msg)
	}
	if p.published != nil {
		p.published(ev.Type)
	}
	return nil
}

// OnPublished has p call f with the type of each event it stored (the
// services count them for their metrics; see internal/metrics). A nil f
// changes nothing.
func (p *Publisher) OnPublished(f func(eventType string)) *Publisher {
	p.published = f
	return p
}

func (p *Publisher) encode(ctx context.Context, ev Event) (*nats.Msg, error) {
	e := event.New()
	if ev.ID == "" {
		ev.ID = mesh.NewID()
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	e.SetID(ev.ID)
	e.SetType(ev.Type)
	e.SetSource(p.source)
	e.SetSubject(ev.Subject)
	e.SetTime(ev.Time.UTC())
	e.SetDataSchema(DataSchema(ev.Type))
	if ev.Sequence > 0 {
		e.SetExtension("sequence", fmt.Sprintf("%020d", ev.Sequence))
	}
	if tp := TraceParent(ctx); tp != "" {
		e.SetExtension("traceparent", tp)
	}
	e.SetExtension("agentid", ev.AgentID)
	data, err := json.Marshal(ev.Data)
	if err != nil {
		return nil, fmt.Errorf("event data %s: %w", ev.Type, err)
	}
	if err := e.SetData(event.ApplicationJSON, data); err != nil {
		return nil, fmt.Errorf("event data %s: %w", ev.Type, err)
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("event %s: %w", ev.Type, err)
	}
	return encodeBinary(&e, EventSubject(ev.AgentID, string(ev.Kind), ev.Subject)), nil
}

// encodeBinary writes a validated 1.0 event in binary mode. It produces the
// same headers as EncodeEvent without the SDK's generic visitor, which costs
// more than the publish itself on the hot path.
func encodeBinary(e *event.Event, subject string) *nats.Msg {
	msg := nats.NewMsg(subject)
	h := msg.Header
	h.Set(ceHeaderPrefix+"specversion", e.SpecVersion())
	h.Set(ceHeaderPrefix+"id", e.ID())
	h.Set(ceHeaderPrefix+"source", e.Source())
	h.Set(ceHeaderPrefix+"type", e.Type())
	if s := e.Subject(); s != "" {
		h.Set(ceHeaderPrefix+"subject", s)
	}
	h.Set(ceHeaderPrefix+"time", e.Time().UTC().Format(time.RFC3339Nano))
	h.Set(headerContentType, e.DataContentType())
	if ds := e.DataSchema(); ds != "" {
		h.Set(ceHeaderPrefix+"dataschema", ds)
	}
	for name, v := range e.Extensions() {
		if s, err := types.Format(v); err == nil {
			h.Set(ceHeaderPrefix+name, s)
		}
	}
	msg.Data = e.Data()
	return msg
}

// WithTraceParent returns ctx continuing the trace of a W3C traceparent,
// stamped on the events published and sent with the requests made with it
// (see internal/tracing). A malformed tp is ignored.
func WithTraceParent(ctx context.Context, tp string) context.Context {
	return tracing.WithTraceParent(ctx, tp)
}

// TraceParent returns the traceparent of ctx's span, or "".
func TraceParent(ctx context.Context) string { return tracing.TraceParent(ctx) }

// LastType returns the type of the newest stored event about one entity (""
// when there is none). A service that finds a change stored without its
// event (the publish was lost with a node) uses it to publish the event
// late, under the same deterministic id.
func (p *Publisher) LastType(ctx context.Context, agentID string, kind mesh.EventKind, subject string) (string, error) {
	msg, err := p.lastEvent(ctx, agentID, kind, subject)
	if msg == nil {
		return "", err
	}
	return msg.Header.Get(ceHeaderPrefix + "type"), nil
}

// LastSequence returns the sequence (Event.Sequence) of the newest stored
// event about one entity: 0 when there is none, or it has none.
func (p *Publisher) LastSequence(ctx context.Context, agentID string, kind mesh.EventKind, subject string) (uint64, error) {
	msg, err := p.lastEvent(ctx, agentID, kind, subject)
	if msg == nil {
		return 0, err
	}
	seq, _ := strconv.ParseUint(msg.Header.Get(ceHeaderPrefix+"sequence"), 10, 64)
	return seq, nil
}

// lastEvent gets the newest stored event about one entity from this
// region's event stream, which stores every event this region's services
// publish (a direct get, which any replica answers); nil, nil when there is
// none.
func (p *Publisher) lastEvent(ctx context.Context, agentID string, kind mesh.EventKind, subject string) (*jetstream.RawStreamMsg, error) {
	p.streamMu.Lock()
	stream := p.stream
	p.streamMu.Unlock()
	if stream == nil {
		var err error
		name, err := EventStreamIn(ctx, p.js, "")
		if err != nil {
			return nil, fmt.Errorf("event stream: %w", err)
		}
		if stream, err = p.js.Stream(ctx, name); err != nil {
			return nil, fmt.Errorf("event stream: %w", err)
		}
		p.streamMu.Lock()
		p.stream = stream
		p.streamMu.Unlock()
	}
	msg, err := stream.GetLastMsgForSubject(ctx, EventSubject(agentID, string(kind), subject))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("last event of %s: %w", subject, err)
	}
	return msg, nil
}
