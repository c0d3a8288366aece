// Package webhooks is the webhook delivery service: people subscribe HTTP
// endpoints to events, and each subscription gets its own durable consumer of
// the event stream and its own delivery worker, so one slow or failing
// endpoint never delays another. Deliveries are structured-mode CloudEvents,
// signed, retried with exponential backoff and jitter for up to a day, then
// dead-lettered where people can see and redrive them. Every piece of
// delivery state is on the bus (the consumer's acknowledgements, the
// subscription and delivery records), so a restart loses nothing.
package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	meshmetrics "github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/internal/homes"
	"github.com/a2amesh/a2amesh/services/internal/listing"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Config configures the service. Zero values take the documented defaults.
type Config struct {
	Conn   *bus.Conn
	Logger zerolog.Logger
	// AllowPrivate lets webhooks reach loopback, private and link-local
	// addresses. Off by default: a webhook URL must not become a way into
	// the platform's own network.
	AllowPrivate bool
	// AttemptTimeout bounds one delivery attempt. Default 10s.
	AttemptTimeout time.Duration
	// RetryMin is the delay before the first retry; each retry doubles it,
	// with jitter, up to RetryMax. Defaults 5s and 1h.
	RetryMin time.Duration
	RetryMax time.Duration
	// RetryFor is how long an event is retried before it is dead-lettered.
	// Default 24h.
	RetryFor time.Duration
	// PublicURL is where A2A clients reach the platform: the base of the
	// artifact links in A2A push notifications.
	PublicURL string
	// Metrics receives the service's metrics; nil records none.
	Metrics prometheus.Registerer
	// Region is the region this process serves (platform.Config.Region).
	// In a multi-region deployment a webhook of every agent reads each
	// region's event stream (see part); on a server in no cluster it is
	// not used.
	Region string
}

func (c *Config) defaults() {
	if c.AttemptTimeout == 0 {
		c.AttemptTimeout = 10 * time.Second
	}
	if c.RetryMin == 0 {
		c.RetryMin = 5 * time.Second
	}
	if c.RetryMax == 0 {
		c.RetryMax = time.Hour
	}
	if c.RetryFor == 0 {
		c.RetryFor = 24 * time.Hour
	}
}

// subscription is a webhook as stored. The secret is kept (it must sign) but
// never returned after creation.
type subscription struct {
	ID     string `json:"webhook_id"`
	URL    string `json:"url"`
	Secret string `json:"secret"`
	// Standard says the secret is keyed as Standard Webhooks libraries key it
	// (a whsec_ secret by its decoded bytes). Subscriptions made before it
	// existed keep their whole secret string as the key, so their receivers
	// go on verifying.
	Standard  bool     `json:"standard_webhooks,omitempty"`
	AgentID   string   `json:"agent_id,omitempty"`
	TaskRunID string   `json:"task_run_id,omitempty"`
	Types     []string `json:"types,omitempty"`
	// Format, and for the A2A formats the notification token and
	// Authorization value the receiver checks (kept, never listed).
	Format          string    `json:"format,omitempty"`
	Token           string    `json:"token,omitempty"`
	AuthScheme      string    `json:"auth_scheme,omitempty"`
	AuthCredentials string    `json:"auth_credentials,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	// Stream is the event stream its consumer reads: for one agent's events
	// (or one run's), the stream of the agent's home region, so its
	// deliveries need that region alone; for every agent's, the gathered
	// log (bus.EventStream). Empty in subscriptions made before: the
	// gathered log.
	Stream string `json:"stream,omitempty"`
	// MovedFrom is the stream it read before its agent moved into the
	// origin, whose gathered log holds copies of that stream's events: those
	// copies are skipped (they were delivered from the stream itself, or
	// are older than the move).
	MovedFrom string `json:"moved_from,omitempty"`
	// Parts are, for a webhook of every agent in a multi-region
	// deployment, its consumers on the event streams of the regions other
	// than the origin: each region's events are delivered from that
	// region's own stream, and the consumer on the gathered log (Stream)
	// skips its copies of them (see part). Empty in webhooks made before,
	// and on a server in no cluster: the gathered log alone.
	Parts []part `json:"parts,omitempty"`
	// GatheredFrom is set while its consumer on the gathered log is not
	// made: a webhook of every agent made while the origin did not answer.
	// The first of its workers to find the origin answering makes it from
	// this time (the webhook's creation, or since) and clears it.
	GatheredFrom *time.Time `json:"gathered_from,omitempty"`
}

// stream names the event stream the subscription's consumer reads.
func (s *subscription) stream() string {
	if s.Stream == "" {
		return bus.EventStream
	}
	return s.Stream
}

// streams names the event streams the subscription's consumers read: its
// stream, then each part whose consumer is made.
func (s *subscription) streams() []string {
	out := []string{s.stream()}
	for _, p := range s.Parts {
		if p.From > 0 {
			out = append(out, p.Stream)
		}
	}
	return out
}

// part returns the part on stream, or nil.
func (s *subscription) part(stream string) *part {
	for i := range s.Parts {
		if s.Parts[i].Stream == stream {
			return &s.Parts[i]
		}
	}
	return nil
}

// everyAgent says whether the subscription reads the events of every
// agent, and so each region's event stream in a multi-region deployment.
func (s *subscription) everyAgent() bool { return s.AgentID == "" }

func (s *subscription) view() meshapi.Webhook {
	return meshapi.Webhook{
		WebhookID: s.ID, URL: s.URL, AgentID: s.AgentID, TaskRunID: s.TaskRunID, Types: s.Types, Format: s.Format,
		SecretHint: hint(s.Secret), CreatedAt: s.CreatedAt,
	}
}

// key returns the HMAC key of the subscription's deliveries.
func (s *subscription) key() []byte {
	if !s.Standard {
		return []byte(s.Secret)
	}
	key, err := Key(s.Secret)
	if err != nil { // refused at creation; kept total for safety
		return []byte(s.Secret)
	}
	return key
}

// a2a reports whether the subscription pushes A2A task notifications.
func (s *subscription) a2a() bool {
	return s.Format == meshapi.WebhookFormatA2A || s.Format == meshapi.WebhookFormatA2AV03
}

// hint masks a secret down to its last four characters.
func hint(secret string) string {
	if len(secret) <= 8 {
		return "****"
	}
	return "****" + secret[len(secret)-4:]
}

// subjects are the event subjects a subscription's consumer reads; a run's
// artifacts are events of kind artifact, matched on their task_run_id later.
func (s *subscription) subjects() []string {
	if s.a2a() {
		// A push notification tells of the task's states; its files come
		// with the task of the state that follows them.
		return []string{bus.EventFilter(s.AgentID, string(mesh.KindTaskRun), s.TaskRunID)}
	}
	if s.TaskRunID != "" {
		return []string{
			bus.EventFilter(s.AgentID, string(mesh.KindTaskRun), s.TaskRunID),
			bus.EventFilter(s.AgentID, string(mesh.KindArtifact), ""),
		}
	}
	if s.AgentID != "" {
		return []string{bus.AgentEventsFilter(s.AgentID)}
	}
	return bus.EventStreamSubjects()
}

// Service is the webhook delivery service.
type Service struct {
	cfg    Config
	js     jetstream.JetStream
	agents *bus.Records[mesh.Agent]
	subs   *bus.Records[subscription]
	// deliveries holds each region's bucket of delivery records, by
	// region, opened when first needed (deliveriesOf).
	dmu        sync.Mutex
	deliveries map[string]*bus.Records[meshapi.Delivery]
	events     *bus.Publisher
	svc        *bus.Service
	watcher    jetstream.KeyWatcher
	client     *http.Client
	metrics    *metrics
	// dir names the regions and their event streams, and adder adds the
	// parts of webhooks of every agent on the streams of regions that have
	// none yet; both nil on a server in no cluster.
	dir   *homes.Directory
	adder *bus.Periodic

	mu sync.Mutex
	// workers are the delivery workers, one per subscription and stream
	// (workerKey).
	workers map[string]*worker
	// latest is each subscription as last seen by the watch.
	latest map[string]*subscription
	// froms holds, per subscription and stream, the first sequence its
	// part delivers, once known (it never changes).
	froms map[string]map[string]uint64
	// unaddable holds, per subscription, the regions whose part could not
	// be added at the last try.
	unaddable map[string]map[string]bool
	wg        sync.WaitGroup
	stop      chan struct{}
}

// New returns a service; Start runs it.
func New(cfg Config) *Service {
	cfg.defaults()
	return &Service{
		cfg: cfg, workers: map[string]*worker{}, latest: map[string]*subscription{}, froms: map[string]map[string]uint64{},
		unaddable: map[string]map[string]bool{}, stop: make(chan struct{}), metrics: newMetrics(cfg.Metrics),
	}
}

// Start answers on the bus and starts a delivery worker for every subscription.
func (s *Service) Start(ctx context.Context) error {
	s.js = s.cfg.Conn.JS
	s.client = newHTTPClient(s.cfg.AllowPrivate)
	var err error
	if s.agents, err = bus.OpenRecords[mesh.Agent](ctx, s.js, bus.BucketAgents); err != nil {
		return err
	}
	if s.subs, err = bus.OpenRecords[subscription](ctx, s.js, bus.BucketWebhooks); err != nil {
		return err
	}
	s.deliveries = map[string]*bus.Records[meshapi.Delivery]{}
	s.events = bus.NewPublisher(s.js, bus.ServiceWebhooks).OnPublished(meshmetrics.EventsPublished(s.cfg.Metrics, bus.ServiceWebhooks))
	if s.cfg.Conn.NC.ConnectedClusterName() != "" {
		if s.dir, err = homes.Open(ctx, s.js, s.cfg.Region, s.cfg.Logger); err != nil {
			return err
		}
	}
	if err := s.watch(ctx); err != nil {
		return err
	}
	if s.dir != nil {
		s.adder = &bus.Periodic{Interval: partsInterval, AtStart: true, Run: s.addParts}
		s.adder.Start(context.WithoutCancel(ctx))
	}
	s.svc, err = bus.Serve(s.cfg.Conn.NC, bus.ServiceSpec{
		Name: bus.ServiceWebhooks, Description: "webhook subscriptions and deliveries", Logger: s.cfg.Logger,
		Timeout: s.cfg.AttemptTimeout + 10*time.Second,
		Endpoints: []bus.Endpoint{
			meshapi.OpWebhooksCreate.Handle(s.handleCreate),
			meshapi.OpWebhooksList.Handle(s.handleList),
			meshapi.OpWebhooksGet.Handle(s.handleGet),
			meshapi.OpWebhooksDelete.Handle(s.handleDelete),
			meshapi.OpWebhooksDeliveries.Handle(s.handleDeliveries),
			meshapi.OpWebhooksRedrive.Handle(s.handleRedrive),
		},
	})
	return err
}

// watch follows the subscriptions bucket: a worker runs for each
// subscription as long as it exists, whichever instance created it.
func (s *Service) watch(ctx context.Context) error {
	w, err := s.subs.KV().WatchAll(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("webhooks: watch subscriptions: %w", err)
	}
	s.watcher = w
	ready := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		once := sync.OnceFunc(func() { close(ready) })
		defer once()
		for e := range w.Updates() {
			if e == nil {
				once()
				continue
			}
			if e.Operation() != jetstream.KeyValuePut {
				s.stopWorker(e.Key())
				continue
			}
			sub, _, err := s.subs.Get(context.Background(), e.Key())
			if err != nil {
				continue
			}
			s.startWorker(sub)
		}
	}()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop stops answering, aborts attempts in flight (their events are offered
// again after a restart) and stops every worker.
func (s *Service) Stop(grace time.Duration) {
	if s.svc != nil {
		_ = s.svc.Stop(grace)
	}
	close(s.stop)
	if s.adder != nil {
		s.adder.Stop()
	}
	if s.watcher != nil {
		_ = s.watcher.Stop()
	}
	s.mu.Lock()
	for id, w := range s.workers {
		w.close()
		delete(s.workers, id)
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.dir.Stop()
}

func (s *Service) handleCreate(ctx context.Context, in *meshapi.CreateWebhookRequest) (*meshapi.CreateWebhookResponse, error) {
	sub, err := s.validate(ctx, in)
	if err != nil {
		return nil, err
	}
	// The consumer is created before the answer, so every event stored after
	// the subscription was confirmed is delivered (or every one since
	// in.Since, when asked).
	deliver, start := jetstream.DeliverNewPolicy, in.Since
	if start != nil {
		deliver = jetstream.DeliverByStartTimePolicy
	}
	if sub.Stream, err = s.homeStream(ctx, sub.AgentID); err != nil {
		return nil, err
	}
	if sub.everyAgent() && s.dir != nil {
		if err := s.createEveryAgent(ctx, sub, deliver, start); err != nil {
			return nil, err
		}
	} else if err := s.createConsumer(ctx, sub, sub.stream(), deliver, start); err != nil {
		return nil, err
	}
	if _, err := s.subs.Create(ctx, sub.ID, sub); err != nil {
		for _, stream := range sub.streams() {
			_ = s.js.DeleteConsumer(context.WithoutCancel(ctx), stream, bus.WebhookConsumer(sub.ID))
		}
		return nil, err
	}
	s.startWorker(sub)
	return &meshapi.CreateWebhookResponse{Webhook: sub.view(), Secret: sub.Secret}, nil
}

// deliveriesOf opens the bucket that records the deliveries of sub's
// consumer on stream: that of the region whose event stream it reads, so a
// delivery is recorded where its events are kept, whatever other region is
// down.
func (s *Service) deliveriesOf(ctx context.Context, stream string) (*bus.Records[meshapi.Delivery], error) {
	region, err := bus.EventStreamRegion(ctx, s.js, stream)
	if err != nil {
		return nil, err
	}
	s.dmu.Lock()
	defer s.dmu.Unlock()
	if r, ok := s.deliveries[region]; ok {
		return r, nil
	}
	ctx, cancel := context.WithTimeout(ctx, bus.RetryBudget)
	defer cancel()
	r, err := bus.OpenRecordsIn[meshapi.Delivery](ctx, s.js, bus.BucketDeliveries, region)
	if err != nil {
		return nil, err
	}
	s.deliveries[region] = r
	return r, nil
}

// homeStream names the event stream a subscription to agentID's events
// reads: its home region's, where those events are stored first, so its
// deliveries go on while any other region (the origin included) is down.
// Every agent's events, or those of an agent not found, are read from the
// gathered log.
func (s *Service) homeStream(ctx context.Context, agentID string) (string, error) {
	if agentID == "" {
		return bus.EventStream, nil
	}
	a, _, err := s.agents.Get(ctx, agentID)
	if errors.Is(err, mesh.ErrNotFound) {
		// Created a moment ago in another region: not yet in this one's copy.
		a, _, err = s.agents.Latest(ctx, agentID)
	}
	switch {
	case errors.Is(err, mesh.ErrNotFound):
		return bus.EventStream, nil
	case err != nil:
		return "", err
	}
	return bus.ReadersEventStream(ctx, s.js, a.HomeRegion)
}

// createConsumer makes the subscription's durable consumer on stream.
func (s *Service) createConsumer(ctx context.Context, sub *subscription, stream string, deliver jetstream.DeliverPolicy, start *time.Time) error {
	cfg := consumerConfig(sub)
	cfg.DeliverPolicy, cfg.OptStartTime = deliver, start
	if _, err := s.js.CreateOrUpdateConsumer(ctx, stream, cfg); err != nil {
		return fmt.Errorf("webhook consumer: %w", err)
	}
	return nil
}

// consumerConfig is the configuration of the subscription's consumers,
// but where they start.
func consumerConfig(sub *subscription) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:        bus.WebhookConsumer(sub.ID),
		Description:    "webhook " + sub.ID,
		FilterSubjects: sub.subjects(),
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        ackWait,
		// One event in flight per endpoint: events of a run arrive in order,
		// and a failing endpoint holds up only itself.
		MaxAckPending: 1,
		MaxDeliver:    -1,
	}
}

const minSecretLen = 16

// checkSecret refuses a secret too short or long to sign with, and a whsec_
// secret that Standard Webhooks libraries could not decode.
func checkSecret(sec string) error {
	if len(sec) < minSecretLen || len(sec) > 512 {
		return mesh.Errorf(mesh.CodeInvalidRequest, "secret must be %d to 512 bytes (or left out to have one generated)", minSecretLen)
	}
	key, err := Key(sec)
	if err != nil || len(key) < minSecretLen {
		return mesh.Errorf(mesh.CodeInvalidRequest, "a secret starting with %s must be followed by the base64 of at least %d bytes (Standard Webhooks); leave it out to have one generated", SecretPrefix, minSecretLen)
	}
	return nil
}

func (s *Service) validate(ctx context.Context, in *meshapi.CreateWebhookRequest) (*subscription, error) {
	u, err := checkURL(ctx, strings.TrimSpace(in.URL), s.cfg.AllowPrivate)
	if err != nil {
		return nil, err
	}
	sub := &subscription{ID: mesh.NewID(), URL: u.String(), Secret: in.Secret, Standard: true, CreatedAt: time.Now().UTC()}
	if sub.Secret == "" {
		sub.Secret = NewSecret()
	}
	if err := checkSecret(sub.Secret); err != nil {
		return nil, err
	}
	if in.AgentID != "" && !mesh.ValidID(in.AgentID) {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "agent_id is not a valid id")
	}
	if in.TaskRunID != "" && !mesh.ValidID(in.TaskRunID) {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "task_run_id is not a valid id")
	}
	sub.AgentID, sub.TaskRunID = in.AgentID, in.TaskRunID
	if err := validateFormat(sub, in); err != nil {
		return nil, err
	}
	for _, t := range in.Types {
		full := strings.TrimSpace(t)
		if !strings.HasPrefix(full, mesh.EventTypePrefix) {
			full = mesh.EventTypePrefix + full
		}
		if !known(full) {
			return nil, mesh.Errorf(mesh.CodeInvalidRequest, "unknown event type %q", t)
		}
		if !slices.Contains(sub.Types, full) {
			sub.Types = append(sub.Types, full)
		}
	}
	return sub, nil
}

func known(eventType string) bool {
	_, ok := mesh.LookupEventType(eventType)
	return ok
}

func (s *Service) handleList(ctx context.Context, in *meshapi.ListWebhooksRequest) (*meshapi.WebhookList, error) {
	all, err := listing.All(ctx, s.subs, jetstream.AllKeys, (*subscription).view,
		func(w *meshapi.Webhook) string { return w.WebhookID })
	if err != nil {
		return nil, err
	}
	return &meshapi.WebhookList{Webhooks: all}, nil
}

func (s *Service) get(ctx context.Context, id string) (*subscription, error) {
	if !mesh.ValidID(id) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "webhook %q not found", id)
	}
	sub, _, err := s.subs.Get(ctx, id)
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "webhook %s not found", id)
	}
	return sub, err
}

func (s *Service) handleGet(ctx context.Context, in *meshapi.WebhookRequest) (*meshapi.Webhook, error) {
	sub, err := s.get(ctx, in.WebhookID)
	if err != nil {
		return nil, err
	}
	v := sub.view()
	v.UnreachableRegions = s.unreachable(ctx, sub)
	return &v, nil
}

func (s *Service) handleDelete(ctx context.Context, in *meshapi.WebhookRequest) (*meshapi.Empty, error) {
	if err := s.remove(ctx, in.WebhookID); err != nil {
		return nil, err
	}
	return nil, nil
}

// remove deletes a subscription, its consumers and its delivery records.
func (s *Service) remove(ctx context.Context, id string) error {
	sub, err := s.get(ctx, id)
	if err != nil {
		return err
	}
	if err := s.subs.Delete(ctx, sub.ID, 0); err != nil {
		return err
	}
	s.stopWorker(sub.ID)
	streams := []string{sub.stream()}
	for _, p := range sub.Parts {
		// Parts still being added too: their consumer may be made.
		streams = append(streams, p.Stream)
	}
	for _, stream := range streams {
		if err := s.js.DeleteConsumer(ctx, stream, bus.WebhookConsumer(sub.ID)); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			s.cfg.Logger.Warn().Err(err).Str("webhook_id", sub.ID).Str("stream", stream).Msg("webhook consumer not deleted")
		}
		deliveries, err := s.deliveriesOf(ctx, stream)
		if err != nil {
			s.cfg.Logger.Warn().Err(err).Str("webhook_id", sub.ID).Str("stream", stream).Msg("webhook delivery records not deleted")
			continue
		}
		if keys, err := deliveries.KV().ListKeysFiltered(ctx, sub.ID+".*"); err == nil {
			for key := range keys.Keys() {
				_ = deliveries.Delete(ctx, key, 0)
			}
		}
	}
	return nil
}

func (s *Service) handleDeliveries(ctx context.Context, in *meshapi.ListDeliveriesRequest) (*meshapi.DeliveryList, error) {
	switch in.State {
	case "", meshapi.DeliveryRetrying, meshapi.DeliveryDead, meshapi.DeliveryDelivered:
	default:
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "state must be retrying, dead or delivered")
	}
	sub, err := s.get(ctx, in.WebhookID)
	if err != nil {
		return nil, err
	}
	out := meshapi.DeliveryList{Deliveries: []meshapi.Delivery{}}
	for _, stream := range sub.streams() {
		err := s.listDeliveries(ctx, sub, stream, in.State, &out)
		if err != nil && stream == sub.stream() {
			return nil, err
		}
		if err != nil {
			// A region's part whose bucket does not answer: the others'
			// are listed, and the webhook's view names the region.
			s.cfg.Logger.Warn().Err(err).Str("webhook_id", sub.ID).Str("stream", stream).Msg("deliveries of a region not listed")
		}
	}
	sort.Slice(out.Deliveries, func(i, j int) bool {
		ra, a, _ := strings.Cut(out.Deliveries[i].DeliveryID, ":")
		rb, b, _ := strings.Cut(out.Deliveries[j].DeliveryID, ":")
		if !strings.Contains(out.Deliveries[i].DeliveryID, ":") {
			ra, a = "", ra
		}
		if !strings.Contains(out.Deliveries[j].DeliveryID, ":") {
			rb, b = "", rb
		}
		if ra != rb {
			return ra < rb
		}
		return len(a) < len(b) || (len(a) == len(b) && a < b)
	})
	return &out, nil
}

// listDeliveries appends the delivery records of sub's consumer on stream
// in state ("": any) to out.
func (s *Service) listDeliveries(ctx context.Context, sub *subscription, stream, state string, out *meshapi.DeliveryList) error {
	deliveries, err := s.deliveriesOf(ctx, stream)
	if err != nil {
		return err
	}
	keys, err := deliveries.KV().ListKeysFiltered(ctx, sub.ID+".*")
	if err != nil {
		return err
	}
	for key := range keys.Keys() {
		d, _, err := deliveries.Get(ctx, key)
		if err != nil || (state != "" && d.State != state) {
			continue
		}
		out.Deliveries = append(out.Deliveries, *d)
	}
	return nil
}

func (s *Service) handleRedrive(ctx context.Context, in *meshapi.RedriveRequest) (*meshapi.Delivery, error) {
	sub, err := s.get(ctx, in.WebhookID)
	if err != nil {
		return nil, err
	}
	return s.redrive(ctx, sub, in.DeliveryID)
}
