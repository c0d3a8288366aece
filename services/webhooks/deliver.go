package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/tracing"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// keptAttempts is how many recent attempts a delivery record keeps.
const keptAttempts = 10

// worker delivers one subscription's events of one event stream, one at a
// time.
type worker struct {
	sub    *subscription
	stream string
	cancel context.CancelFunc
	done   chan struct{}
	// down is set while the worker cannot reach its consumer.
	down atomic.Bool
}

func (w *worker) close() {
	w.cancel()
	<-w.done
}

// workerKey names the worker of subscription id on stream.
func workerKey(id, stream string) string { return id + " " + stream }

// startWorker starts a worker for each stream the subscription reads, and
// stops those of streams it no longer reads (its agent moved).
func (s *Service) startWorker(sub *subscription) {
	streams := sub.streams()
	s.mu.Lock()
	s.latest[sub.ID] = sub
	for _, p := range sub.Parts {
		if p.From > 0 {
			s.knowFrom(sub.ID, p.Stream, p.From)
		}
	}
	var stale []*worker
	for key, w := range s.workers {
		if w.sub.ID == sub.ID && !slices.Contains(streams, w.stream) {
			delete(s.workers, key)
			stale = append(stale, w)
		}
	}
	s.mu.Unlock()
	for _, w := range stale {
		w.close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.stop:
		return
	default:
	}
	for _, stream := range streams {
		key := workerKey(sub.ID, stream)
		if _, ok := s.workers[key]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		w := &worker{sub: sub, stream: stream, cancel: cancel, done: make(chan struct{})}
		s.workers[key] = w
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer close(w.done)
			s.run(ctx, w)
		}()
	}
}

func (s *Service) stopWorker(id string) {
	s.mu.Lock()
	var stopped []*worker
	for key, w := range s.workers {
		if w.sub.ID == id {
			delete(s.workers, key)
			stopped = append(stopped, w)
		}
	}
	delete(s.latest, id)
	delete(s.froms, id)
	delete(s.unaddable, id)
	s.mu.Unlock()
	for _, w := range stopped {
		w.close()
	}
}

// run feeds one subscription's endpoint from one stream until ctx ends,
// reconnecting to its consumer when the bus comes and goes, and making it
// again when it was lost while the subscription stands.
func (s *Service) run(ctx context.Context, w *worker) {
	sub := w.sub
	pause := bus.Backoff{Initial: time.Second, Max: time.Second, Jitter: 0.5}
	// from is where a lost consumer is made again: after the last event
	// this worker settled, or, before it settled one, when it started
	// (what came before was the consumer's to track).
	from := time.Now()
	for ctx.Err() == nil {
		err := s.consume(ctx, w, &from)
		if err != nil && ctx.Err() == nil && !errors.Is(err, errMoved) {
			w.down.Store(true)
		}
		switch {
		case ctx.Err() != nil || errors.Is(err, errMoved):
			return
		case errors.Is(err, jetstream.ErrConsumerNotFound):
			stands, rerr := s.remake(ctx, sub, w.stream, from)
			if rerr == nil && !stands {
				return
			}
			if rerr == nil {
				continue
			}
			err = rerr
		}
		s.cfg.Logger.Warn().Err(err).Str("webhook_id", sub.ID).Str("stream", w.stream).Msg("webhook consumer interrupted; resuming")
		_ = pause.Sleep(ctx) // the loop ends when ctx does
	}
}

// remake makes the consumer of a subscription on stream again, from the
// events stored at or after from, when the subscription still reads that
// stream; deleted, or moved to another stream (whose worker reads it), it
// says the worker is done. A consumer deleted with its subscription goes
// after the subscription's record, so a worker never makes again the
// consumer of a subscription being deleted.
func (s *Service) remake(ctx context.Context, sub *subscription, stream string, from time.Time) (stands bool, err error) {
	cur, _, err := s.subs.Latest(ctx, sub.ID)
	switch {
	case errors.Is(err, mesh.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	case !slices.Contains(cur.streams(), stream):
		return false, nil
	case cur.GatheredFrom != nil && stream == cur.stream():
		return true, s.makeGathered(ctx, cur)
	}
	s.cfg.Logger.Warn().Str("webhook_id", sub.ID).Str("stream", stream).Time("from", from).
		Msg("webhook consumer was lost while its subscription stands; made again from the last event delivered")
	return true, s.createConsumer(ctx, cur, stream, jetstream.DeliverByStartTimePolicy, &from)
}

// consume pulls the subscription's events one at a time: each pull is made
// once the previous event is settled, so with one delivery outstanding at
// most (MaxAckPending 1) no pull waits on the server behind an
// unacknowledged event.
//
// from is moved past each event settled (acked or terminated), or onto
// one offered again.
func (s *Service) consume(ctx context.Context, w *worker, from *time.Time) error {
	sub := w.sub
	cons, err := s.js.Consumer(ctx, w.stream, bus.WebhookConsumer(sub.ID))
	if err != nil {
		return err
	}
	w.down.Store(false)
	if cfg := cons.CachedInfo().Config; cfg.AckWait != ackWait {
		// Made by an earlier version, which waited longer for a stopped
		// worker's event.
		cfg.AckWait = ackWait
		if _, err := s.js.UpdateConsumer(ctx, w.stream, cfg); err != nil {
			s.cfg.Logger.Warn().Err(err).Str("webhook_id", sub.ID).Msg("webhook consumer's ack wait not updated")
		}
	}
	for {
		pctx, cancel := context.WithTimeout(ctx, pullWait)
		msg, err := cons.Next(jetstream.FetchContext(pctx))
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded), errors.Is(err, jetstream.ErrNoMessages):
			// Nothing waits in the stream: the moment to follow an agent
			// that moved (the watch of the subscriptions then starts a
			// worker on its new stream).
			if moved, err := s.follow(ctx, sub); err != nil {
				s.cfg.Logger.Warn().Err(err).Str("webhook_id", sub.ID).Msg("webhook not moved to its agent's new home region")
			} else if moved {
				return errMoved
			}
			continue
		case err != nil:
			return err
		}
		settled := s.handle(ctx, w, msg)
		if meta, err := msg.Metadata(); err == nil {
			*from = meta.Timestamp
			if settled {
				*from = from.Add(time.Nanosecond)
			}
		}
	}
}

// errMoved ends a worker whose subscription moved to another event stream.
var errMoved = errors.New("webhook moved to another event stream")

// follow moves a subscription to one agent's events onto the event stream
// of the agent's home region when the agent moved since it was made (a
// move needs the agent to have no open run, so its old stream holds no
// more of its events once this worker has delivered them): a consumer on
// the new stream from the time of the last of the agent's events in the
// old one, the subscription's record pointing at it (a compare-and-set:
// of the processes that find the move, one moves it), and the old
// consumer deleted. It reports whether the subscription moved.
func (s *Service) follow(ctx context.Context, sub *subscription) (bool, error) {
	if sub.AgentID == "" || sub.TaskRunID != "" {
		return false, nil
	}
	// The agent's home, from this region's copy of the agents bucket: a
	// look that asks no server while the agent stays where it is.
	a, _, err := s.agents.Get(ctx, sub.AgentID)
	if err != nil {
		return false, nil
	}
	if home, err := bus.EventStreamIn(ctx, s.js, a.HomeRegion); err != nil || home == sub.stream() {
		return false, err
	}
	want, err := bus.ReadersEventStream(ctx, s.js, a.HomeRegion)
	if err != nil || want == sub.stream() {
		return false, err
	}
	start := sub.CreatedAt
	if old, err := s.js.Stream(ctx, sub.stream()); err == nil {
		if last, err := old.GetLastMsgForSubject(ctx, bus.AgentEventsFilter(sub.AgentID)); err == nil && last.Time.After(start) {
			start = last.Time
		}
	}
	cur, rev, err := s.subs.Latest(ctx, sub.ID)
	if err != nil {
		return false, err
	}
	if cur.stream() != sub.stream() {
		return true, nil // moved by another process
	}
	moved := *cur
	moved.Stream, moved.MovedFrom = want, ""
	if want == bus.EventStream {
		moved.MovedFrom = sub.stream()
	}
	if err := s.createConsumer(ctx, &moved, moved.stream(), jetstream.DeliverByStartTimePolicy, &start); err != nil {
		return false, err
	}
	if _, err := s.subs.Update(ctx, sub.ID, &moved, rev); errors.Is(err, mesh.ErrConflict) {
		return true, nil
	} else if err != nil {
		s.dropUnusedConsumer(ctx, sub.ID, moved.stream())
		return false, err
	}
	if err := s.js.DeleteConsumer(ctx, sub.stream(), bus.WebhookConsumer(sub.ID)); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		s.cfg.Logger.Warn().Err(err).Str("webhook_id", sub.ID).Msg("webhook's consumer on the old stream not deleted")
	}
	s.cfg.Logger.Info().Str("webhook_id", sub.ID).Str("agent_id", sub.AgentID).Str("stream", want).Msg("webhook follows its agent to its new home region")
	return true, nil
}

// dropUnusedConsumer deletes the consumer on stream that a move which
// failed made, unless the subscription reads that stream now: another
// process that found the same move may have moved it meanwhile (this
// process's change then failed, or was cut short as its worker stopped for
// the moved subscription), and the consumer the two made is that
// process's too. When the subscription cannot be read, the consumer stays:
// a move tried again takes it up.
func (s *Service) dropUnusedConsumer(ctx context.Context, id, stream string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	cur, _, err := s.subs.Latest(ctx, id)
	if err != nil || cur.stream() == stream {
		return
	}
	_ = s.js.DeleteConsumer(ctx, stream, bus.WebhookConsumer(id))
}

// pullWait is how long one pull for a subscription's next event waits.
const pullWait = 30 * time.Second

// ackWait is how long an event handed to a worker stays that worker's
// without word from it. A worker that stopped (a restart, a crash, or a
// pull the server answered as the worker left) leaves its event to the
// next one this soon; an attempt that takes longer says, every half of
// it, that it is still in progress.
const ackWait = 5 * time.Second

// inProgress tells the server, every half ackWait until the returned stop
// is called, that msg is still being delivered.
func inProgress(msg jetstream.Msg) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(ackWait / 2)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	return func() { close(done) }
}

// handle delivers one event and settles its message: acked when delivered
// (or not for this subscription), offered again after a backoff when the
// attempt failed, terminated once it is dead-lettered. settled: acked or
// terminated, so the stream's next event is the next to deliver.
func (s *Service) handle(ctx context.Context, w *worker, msg jetstream.Msg) (settled bool) {
	sub := w.sub
	meta, err := msg.Metadata()
	if err != nil {
		_ = msg.Term()
		return true
	}
	if skip, settled := s.skipCopy(ctx, w, msg); skip {
		return settled
	}
	if src, _, _ := strings.Cut(msg.Headers().Get(bus.SourcedHeader), " "); sub.MovedFrom != "" && src == sub.MovedFrom {
		// The gathered log's copy of an event of the stream it read
		// before its agent moved (see subscription.MovedFrom).
		_ = msg.Ack()
		return true
	}
	e, err := bus.DecodeEvent(ctx, &nats.Msg{Subject: msg.Subject(), Header: msg.Headers(), Data: msg.Data()})
	if err != nil || !matches(sub, e.Type(), e.Data()) {
		_ = msg.Ack()
		return true
	}
	d, err := s.payload(sub, e)
	if err != nil {
		s.cfg.Logger.Warn().Ctx(ctx).Err(err).Str("webhook_id", sub.ID).Str("event_id", e.ID()).Msg("event cannot be delivered in the webhook's format")
		_ = msg.Term()
		return true
	}
	seq := meta.Sequence.Stream
	stop := inProgress(msg)
	defer stop()
	attempt := s.attempt(bus.InEventTrace(ctx, e), sub, e.ID(), d)
	if ctx.Err() != nil {
		// Stopping: the attempt was cut short by us, not by the endpoint.
		// The event is offered again once a worker runs.
		_ = msg.Nak()
		return false
	}
	if attempt.Error == "" {
		s.metrics.delivered.Inc()
		if meta.NumDelivered > 1 {
			s.record(ctx, sub, w.stream, seq, e.ID(), e.Type(), e.Subject(), attempt, meshapi.DeliveryDelivered, nil)
		}
		_ = msg.Ack()
		if retiring(sub, e.Type()) {
			// The task ended and its end was pushed: nothing more will come,
			// so the subscription and its consumer go (not from this worker's
			// goroutine, which stopping the worker waits for; Stop waits for
			// this one, at most retire's 10 s).
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.retire(sub)
			}()
		}
		return true
	}
	s.metrics.failed.Inc()
	rec := s.record(ctx, sub, w.stream, seq, e.ID(), e.Type(), e.Subject(), attempt, meshapi.DeliveryRetrying, nil)
	first := attempt.At
	if rec != nil {
		first = rec.FirstAttemptAt
	}
	delay := s.backoff(int(meta.NumDelivered))
	if time.Since(first)+delay > s.cfg.RetryFor {
		s.metrics.dead.Inc()
		dead := s.record(ctx, sub, w.stream, seq, e.ID(), e.Type(), e.Subject(), nil, meshapi.DeliveryDead, nil)
		s.announceDead(ctx, sub, seq, e, attempt, dead)
		_ = msg.Term()
		return true
	}
	next := time.Now().Add(delay).UTC()
	s.record(ctx, sub, w.stream, seq, e.ID(), e.Type(), e.Subject(), nil, meshapi.DeliveryRetrying, &next)
	_ = msg.NakWithDelay(delay)
	return false
}

// matches applies the filters the consumer's subjects cannot express.
func matches(sub *subscription, eventType string, data []byte) bool {
	if len(sub.Types) > 0 && !slices.Contains(sub.Types, eventType) {
		return false
	}
	if sub.a2a() && mesh.DecidedByPolicyAlone(eventType, data) {
		// A push tells the task's states: a step the policy decided
		// without asking left the task as it was.
		return false
	}
	if sub.TaskRunID != "" && strings.HasPrefix(eventType, mesh.EventTypePrefix+string(mesh.KindArtifact)+".") {
		var a struct {
			TaskRunID string `json:"task_run_id"`
		}
		_ = json.Unmarshal(data, &a)
		return a.TaskRunID == sub.TaskRunID
	}
	return true
}

// backoff is the delay before attempt n+1: RetryMin doubled for each failed
// attempt, capped at RetryMax, with jitter so retries of many events do not
// arrive in lockstep.
func (s *Service) backoff(failed int) time.Duration {
	b := bus.Backoff{Initial: s.cfg.RetryMin, Max: s.cfg.RetryMax, Jitter: 0.25}
	return b.Delay(max(failed-1, 0))
}

// attempt sends one delivery and says how it went; a 2xx answer is success.
// Every format is signed the same way, so any receiver may check it.
func (s *Service) attempt(ctx context.Context, sub *subscription, eventID string, d *delivery) *meshapi.DeliveryAttempt {
	actx, cancel := context.WithTimeout(ctx, s.cfg.AttemptTimeout)
	defer cancel()
	start := time.Now()
	a := &meshapi.DeliveryAttempt{At: start.UTC()}
	req, err := http.NewRequestWithContext(actx, http.MethodPost, sub.URL, bytes.NewReader(d.body))
	if err != nil {
		a.Error = "invalid request"
		return a
	}
	ts := start.Unix()
	for k, v := range d.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", d.contentType)
	req.Header.Set("User-Agent", "a2a-mesh-webhooks/1")
	req.Header.Set(HeaderID, eventID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(sub.key(), eventID, ts, d.body))
	// The delivery continues the event's trace; its span names the
	// webhook, never its URL (which may hold a secret).
	req, span := tracing.StartHTTPClient(req, tracer, "webhook delivery", tracing.AttrWebhookID.String(sub.ID))
	resp, err := s.client.Do(req)
	tracing.EndHTTPClient(span, resp, err)
	a.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	s.metrics.latency.Observe(time.Since(start).Seconds())
	if err != nil {
		a.Error = attemptError(err)
		return a
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	a.StatusCode = resp.StatusCode
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		a.Error = "HTTP " + strconv.Itoa(resp.StatusCode)
	}
	return a
}

// attemptError describes a failed attempt without echoing anything the
// endpoint sent.
func attemptError(err error) string {
	switch {
	case errors.Is(err, errPrivateTarget):
		return "target address is not public"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	}
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return err.Error()
}

// record writes what happened to one event's delivery: the attempt (if any),
// its state and when it is tried next. It returns the record as stored, or
// nil when it could not be written (the delivery itself goes on).
func (s *Service) record(ctx context.Context, sub *subscription, stream string, seq uint64, eventID, eventType, subject string, a *meshapi.DeliveryAttempt, state string, next *time.Time) *meshapi.Delivery {
	key := sub.ID + "." + strconv.FormatUint(seq, 10)
	now := time.Now().UTC()
	apply := func(d *meshapi.Delivery) {
		if a != nil {
			d.Attempts = append(d.Attempts, *a)
			if len(d.Attempts) > keptAttempts {
				d.Attempts = d.Attempts[len(d.Attempts)-keptAttempts:]
			}
			d.AttemptCount++
		}
		d.State, d.NextAttemptAt, d.UpdatedAt = state, next, now
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bus.RetryBudget)
	defer cancel()
	deliveries, err := s.deliveriesOf(wctx, stream)
	if err != nil {
		s.cfg.Logger.Warn().Err(err).Str("webhook_id", sub.ID).Uint64("sequence", seq).Msg("delivery record not written")
		return nil
	}
	d, _, err := deliveries.Modify(wctx, key, func(d *meshapi.Delivery) error {
		apply(d)
		return nil
	})
	if errors.Is(err, mesh.ErrNotFound) {
		d = &meshapi.Delivery{
			DeliveryID: deliveryID(sub, stream, seq), WebhookID: sub.ID, EventID: eventID, EventType: eventType,
			Subject: subject, Attempts: []meshapi.DeliveryAttempt{}, FirstAttemptAt: now,
		}
		if a != nil {
			d.FirstAttemptAt = a.At
		}
		apply(d)
		_, err = deliveries.Create(wctx, key, d)
	}
	if err != nil {
		s.cfg.Logger.Warn().Ctx(ctx).Err(err).Str("webhook_id", sub.ID).Uint64("sequence", seq).Msg("delivery record not written")
		return nil
	}
	return d
}

// redrive sends a recorded delivery once more, now, and records the attempt.
func (s *Service) redrive(ctx context.Context, sub *subscription, deliveryID string) (*meshapi.Delivery, error) {
	stream, seq, ok := sub.delivery(deliveryID)
	if !ok {
		return nil, mesh.Errorf(mesh.CodeNotFound, "delivery %q not found", deliveryID)
	}
	key := sub.ID + "." + strconv.FormatUint(seq, 10)
	deliveries, err := s.deliveriesOf(ctx, stream)
	if err != nil {
		return nil, err
	}
	d, _, err := deliveries.Get(ctx, key)
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "delivery %s not found", deliveryID)
	}
	if err != nil {
		return nil, err
	}
	events, err := s.js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("event stream %s: %w", stream, err)
	}
	raw, err := events.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "event %s is past the retention window", d.EventID)
	}
	if err != nil {
		return nil, fmt.Errorf("read event %d: %w", seq, err)
	}
	e, err := bus.DecodeEvent(ctx, &nats.Msg{Subject: raw.Subject, Header: raw.Header, Data: raw.Data})
	if err != nil {
		return nil, err
	}
	body, err := s.payload(sub, e)
	if err != nil {
		return nil, err
	}
	a := s.attempt(bus.InEventTrace(ctx, e), sub, e.ID(), body)
	state := d.State
	if a.Error == "" {
		state = meshapi.DeliveryDelivered
		s.metrics.delivered.Inc()
	} else {
		s.metrics.failed.Inc()
	}
	if state == meshapi.DeliveryRetrying {
		// The consumer still retries this one on its own schedule.
		return s.record(ctx, sub, stream, seq, e.ID(), e.Type(), e.Subject(), a, state, d.NextAttemptAt), nil
	}
	out := s.record(ctx, sub, stream, seq, e.ID(), e.Type(), e.Subject(), a, state, nil)
	if out == nil {
		return nil, fmt.Errorf("delivery record not written")
	}
	return out, nil
}

// deliveryFailed is the data of a webhook.delivery_failed event. It names the
// subscription and the event, never the URL or anything secret.
type deliveryFailed struct {
	WebhookID      string    `json:"webhook_id"`
	DeliveryID     string    `json:"delivery_id"`
	Format         string    `json:"format"`
	EventID        string    `json:"event_id"`
	EventType      string    `json:"event_type"`
	Subject        string    `json:"subject"`
	TaskRunID      string    `json:"task_run_id,omitempty"`
	AttemptCount   int       `json:"attempt_count"`
	FirstAttemptAt time.Time `json:"first_attempt_at"`
	LastStatusCode int       `json:"last_status_code,omitempty"`
	LastError      string    `json:"last_error,omitempty"`
}

// announceDead publishes that a delivery was given up, so whoever watches
// the agent's events (and A2A callers waiting for push notifications, by
// their own means) learns it without polling the deliveries. Subscriptions
// of no agent have no one to address it to: their dead letters are only
// listed.
func (s *Service) announceDead(ctx context.Context, sub *subscription, seq uint64, e *event.Event, last *meshapi.DeliveryAttempt, rec *meshapi.Delivery) {
	if sub.AgentID == "" {
		return
	}
	format := sub.Format
	if format == "" {
		format = meshapi.WebhookFormatCloudEvents
	}
	data := deliveryFailed{
		WebhookID: sub.ID, DeliveryID: strconv.FormatUint(seq, 10), Format: format, EventID: e.ID(),
		EventType: e.Type(), Subject: e.Subject(), TaskRunID: sub.TaskRunID, AttemptCount: 1, FirstAttemptAt: last.At,
		LastStatusCode: last.StatusCode, LastError: last.Error,
	}
	if rec != nil {
		data.AttemptCount, data.FirstAttemptAt = rec.AttemptCount, rec.FirstAttemptAt
	}
	err := s.events.Publish(context.WithoutCancel(ctx), bus.Event{
		Type: mesh.EventWebhookDeliveryFailed, Kind: mesh.KindWebhook, AgentID: sub.AgentID, Subject: sub.ID,
		ID: sub.ID + "." + data.DeliveryID + ".failed", Data: data,
	})
	if err != nil {
		s.cfg.Logger.Error().Ctx(ctx).Err(err).Str("webhook_id", sub.ID).Msg("delivery_failed event not published")
	}
}

// retire removes an A2A push subscription whose task ended, with its
// consumer. Its deliveries that failed at least once stay listed until they
// expire; retiring skips a subscription that still has a dead letter.
func (s *Service) retire(sub *subscription) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	deliveries, err := s.deliveriesOf(ctx, sub.stream())
	if err != nil {
		s.cfg.Logger.Warn().Err(err).Str("webhook_id", sub.ID).Msg("ended push subscription not removed")
		return
	}
	if keys, err := deliveries.KV().ListKeysFiltered(ctx, sub.ID+".*"); err == nil {
		for key := range keys.Keys() {
			if d, _, err := deliveries.Get(ctx, key); err == nil && d.State == meshapi.DeliveryDead {
				return
			}
		}
	}
	if err := s.remove(ctx, sub.ID); err != nil && !errors.Is(err, mesh.ErrNotFound) {
		s.cfg.Logger.Warn().Err(err).Str("webhook_id", sub.ID).Msg("ended push subscription not removed")
	}
}
