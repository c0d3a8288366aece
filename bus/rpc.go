package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/internal/workpool"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"
)

// Headers used on service requests.
const (
	headerTraceParent = "traceparent"
	headerErrorCode   = micro.ErrorCodeHeader
	// headerDeadline carries the caller's deadline (Unix milliseconds), so a
	// handler stops working, and answers, before its caller gives up.
	headerDeadline = "Mesh-Deadline"
)

// replyMargin is kept of the caller's deadline for the answer to travel back.
const replyMargin = 250 * time.Millisecond

// DefaultCallTimeout bounds a service call whose context has no deadline.
const DefaultCallTimeout = 10 * time.Second

// Call sends req as JSON to a service subject and decodes the reply into resp
// (which may be nil). A service error comes back as *mesh.Error; a missing
// service as UNAVAILABLE.
func Call(ctx context.Context, nc *nats.Conn, subject string, req, resp any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("call %s: encode: %w", subject, err)
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	return CallMsg(ctx, nc, msg, resp)
}

// CallMsg is Call with a request message made by the caller (a body that is
// not JSON, headers of its own).
func CallMsg(ctx context.Context, nc *nats.Conn, msg *nats.Msg, resp any) (err error) {
	subject := msg.Subject
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCallTimeout)
		defer cancel()
	}
	ctx, span := startCall(ctx, subject)
	defer func() { endSpan(span, err) }()
	if tp := TraceParent(ctx); tp != "" {
		msg.Header.Set(headerTraceParent, tp)
	}
	if d, ok := ctx.Deadline(); ok {
		msg.Header.Set(headerDeadline, strconv.FormatInt(d.UnixMilli(), 10))
	}
	reply, err := nc.RequestMsgWithContext(ctx, msg)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		// The NATS error stays reachable: a runtime tells "no service
		// answers through this server" apart from other unavailability.
		return fmt.Errorf("%w: %w", mesh.Errorf(mesh.CodeUnavailable, "no %s service is running", serviceOf(subject)), err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return mesh.Errorf(mesh.CodeTimeout, "%s did not answer in time", serviceOf(subject))
	case errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrReconnectBufExceeded):
		// Not sent: the connection is finding a server again (a connection
		// that keeps nothing for later says its buffer is full).
		return fmt.Errorf("%w: %w", mesh.Errorf(mesh.CodeUnavailable, "%s: not connected to NATS right now (reconnecting)", serviceOf(subject)), err)
	case err != nil:
		return fmt.Errorf("call %s: %w", subject, err)
	}
	if reply.Header.Get(headerErrorCode) != "" {
		var e mesh.Error
		if err := json.Unmarshal(reply.Data, &e); err != nil || e.Code == "" {
			return mesh.Errorf(mesh.CodeInternal, "%s", reply.Header.Get(micro.ErrorHeader))
		}
		if region := reply.Header.Get(HeaderUnreachableRegion); region != "" {
			return &RegionUnreachableError{Region: region, Err: &e}
		}
		return &e
	}
	if resp == nil {
		return nil
	}
	if err := json.Unmarshal(reply.Data, resp); err != nil {
		return fmt.Errorf("call %s: decode reply: %w", subject, err)
	}
	return nil
}

// NotSent reports whether a call failed with err before its request
// reached any service: the connection was finding a server again (and
// keeps nothing for later), or no service listens on the subject. Such a
// request did nothing; one that timed out may have done anything.
func NotSent(err error) bool {
	return errors.Is(err, nats.ErrReconnectBufExceeded) || errors.Is(err, nats.ErrNoResponders)
}

// CallIdempotent is Call for an operation that may be repeated with the
// same effect (a claim of a given attempt, a repeated report): a try that
// got no answer within tryTimeout, or found no service (the caller's node
// was lost and it is reconnecting), is sent again until ctx ends. A single
// long wait would outlast what the request holds: a claim whose answer was
// lost with a node leaves the run held, and its lease running, for a
// runtime that never heard so. Without a deadline on ctx, the tries end
// after DefaultCallTimeout.
func CallIdempotent(ctx context.Context, nc *nats.Conn, subject string, req, resp any, tryTimeout time.Duration) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCallTimeout)
		defer cancel()
	}
	b := Backoff{Initial: 50 * time.Millisecond, Max: time.Second, Jitter: 0.2}
	// sent is the error of the last try that reached a service: the call
	// ends with it rather than with a later try's that did not (NotSent),
	// since the request may have done its work.
	var sent error
	for {
		tctx, cancel := context.WithTimeout(ctx, tryTimeout)
		err := Call(tctx, nc, subject, req, resp)
		cancel()
		switch {
		case err == nil:
		case !NotSent(err):
			sent = err
		case sent != nil:
			err = sent
		}
		if err == nil || ctx.Err() != nil {
			return err
		}
		if code := mesh.AsError(err).Code; code != mesh.CodeTimeout && code != mesh.CodeUnavailable {
			return err
		}
		// A region the service found unreachable is refused until it
		// answers again: trying again at once would only be refused again.
		var down *RegionUnreachableError
		if errors.As(err, &down) {
			return err
		}
		if b.Sleep(ctx) != nil {
			return err
		}
	}
}

func serviceOf(subject string) string {
	if _, _, op, ok := ParseRuntimeSubject(subject); ok {
		return "runtime " + op
	}
	return subject
}

// Request is one service request being handled.
type Request struct {
	// Subject the request arrived on; runtime subjects carry trusted ids.
	Subject string
	Data    []byte
	// HandedOver marks a request another region's copy of the service
	// handed to this one (see Route): Subject is the one it first arrived
	// on.
	HandedOver bool
}

// Runtime returns the agent and runtime a request on a runtime subject
// came from. The NATS server lets a runtime publish only under its own
// ids, so they are trusted; a request on any other subject is refused.
func (r *Request) Runtime() (agentID, runtimeID string, err error) {
	agentID, runtimeID, _, ok := ParseRuntimeSubject(r.Subject)
	if !ok || !mesh.ValidID(agentID) || !mesh.ValidID(runtimeID) {
		return "", "", mesh.Errorf(mesh.CodeInvalidRequest, "not a runtime subject")
	}
	return agentID, runtimeID, nil
}

// Decode unmarshals the request body into v, rejecting unknown fields, and
// answers INVALID_REQUEST on malformed input.
func (r *Request) Decode(v any) error {
	if len(r.Data) == 0 {
		return nil
	}
	if err := DecodeStrict(r.Data, v); err != nil {
		return mesh.Errorf(mesh.CodeInvalidRequest, "malformed request: %v", err)
	}
	return nil
}

// DecodeStrict unmarshals JSON, rejecting unknown fields and trailing data.
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	// dec.More() would miss a stray "}" or "]": only the end of input may follow.
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// HandlerFunc handles a request and returns the reply body or an error.
type HandlerFunc func(ctx context.Context, req *Request) (any, error)

// Service is a platform service answering on the bus (Serve starts one). It
// is a service of nats.go's micro package, which brings what copies of a
// service need: one queue group per endpoint, so copies share the requests;
// errors in the micro headers; discovery and statistics on $SRV. On top of
// micro, each request is handled on a goroutine of its own, taken from the
// service's pool (micro calls an endpoint's handler one request at a time),
// within a bound, under the caller's deadline and trace, and answered only
// on a requester's inbox.
type Service struct {
	nc      *nats.Conn
	svc     micro.Service
	sem     chan struct{}
	workers *workpool.Pool
	log     zerolog.Logger
	timeout time.Duration
	// mu orders counting a request in (wg.Add) before Stop's wait: micro
	// may hand over a request while the service stops.
	mu       sync.Mutex
	stopping bool
	wg       sync.WaitGroup
}

// serviceConfig configures a Service (Serve builds it from a ServiceSpec).
type serviceConfig struct {
	Name        string
	Version     string
	Description string
	// Concurrency bounds requests handled at once. Default 256.
	Concurrency int
	// Timeout bounds one handler. Default 60s (long enough for a long-poll pull).
	Timeout time.Duration
	Logger  zerolog.Logger
}

// newService registers a micro service on nc.
func newService(nc *nats.Conn, cfg serviceConfig) (*Service, error) {
	svc, err := micro.AddService(nc, micro.Config{
		Name:        cfg.Name,
		Version:     cfg.Version,
		Description: cfg.Description,
	})
	if err != nil {
		return nil, fmt.Errorf("add service %s: %w", cfg.Name, err)
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 256
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	return &Service{nc: nc, svc: svc, sem: make(chan struct{}, cfg.Concurrency), workers: workpool.New(idleWorkers),
		log: cfg.Logger, timeout: cfg.Timeout}, nil
}

// idleWorkers is how many of a service's handler goroutines wait for the
// next request (see workpool.Pool).
const idleWorkers = 32

// handle adds an endpoint on subject. Each request runs on a goroutine of
// its own (from the pool), so one slow request never holds up the others;
// bounded requests count against the service's concurrency.
func (s *Service) handle(name, subject string, h HandlerFunc, bounded bool) error {
	return s.handleFrom(name, subject, h, bounded, false)
}

// handleFrom is handle; handedOver marks the endpoint of a region's
// subject (RegionSubject), whose requests carry the subject they first
// arrived on.
func (s *Service) handleFrom(name, subject string, h HandlerFunc, bounded, handedOver bool) error {
	h = traced(s.svc.Info().Name, name, h)
	return s.svc.AddEndpoint(name, micro.HandlerFunc(func(r micro.Request) {
		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			s.respondError(r, mesh.Errorf(mesh.CodeUnavailable, "service %s is stopping; try again", s.svc.Info().Name))
			return
		}
		s.wg.Add(1)
		s.mu.Unlock()
		if bounded {
			s.sem <- struct{}{}
		}
		s.workers.Go(func() {
			defer func() {
				if bounded {
					<-s.sem
				}
				s.wg.Done()
			}()
			s.serve(name, r, h, handedOver)
		})
	}), micro.WithEndpointSubject(subject))
}

func (s *Service) serve(name string, r micro.Request, h HandlerFunc, handedOver bool) {
	ctx, cancel := handlerContext(r.Headers(), s.timeout)
	defer cancel()
	ctx = WithTraceParent(ctx, r.Headers().Get(headerTraceParent))
	defer func() {
		if p := recover(); p != nil {
			s.log.Error().Ctx(ctx).Str("endpoint", name).Interface("panic", p).Bytes("stack", debug.Stack()).Msg("handler panicked")
			s.respondError(r, mesh.Errorf(mesh.CodeInternal, "internal error"))
		}
	}()
	subject := r.Subject()
	if handedOver {
		subject = HandedOverSubject(subject, nats.Header(r.Headers()))
	}
	resp, err := h(ctx, &Request{Subject: subject, Data: r.Data(), HandedOver: handedOver})
	if err != nil {
		e := mesh.AsError(err)
		var me *mesh.Error
		switch {
		case !errors.As(err, &me) && Transient(err):
			// A store or a service that did not answer (a node lost, a
			// machine too busy) is not an internal error the caller cannot
			// act on: UNAVAILABLE when nothing was done, so it may send the
			// request again; TIMEOUT when it may have been done.
			s.log.Warn().Ctx(ctx).Err(err).Str("endpoint", name).Msg("request failed for now")
			e = mesh.Errorf(mesh.CodeTimeout, "%s did not finish in time (the platform is busy, or a node was lost); it may have been done", name)
			if definitelyNotDone(err) {
				e = mesh.Errorf(mesh.CodeUnavailable, "%s could not be done now (the platform is busy, or a node was lost); retry shortly", name)
			}
		case e.Code == mesh.CodeInternal:
			s.log.Error().Ctx(ctx).Err(err).Str("endpoint", name).Msg("request failed")
		}
		answer := errorAnswer(e)
		var down *RegionUnreachableError
		if errors.As(err, &down) {
			answer.Header.Set(HeaderUnreachableRegion, down.Region)
		}
		_ = s.reply(r, answer)
		return
	}
	body, err := json.Marshal(resp)
	if err != nil {
		s.log.Error().Ctx(ctx).Err(err).Str("endpoint", name).Msg("reply not encodable")
		s.respondError(r, mesh.Errorf(mesh.CodeInternal, "internal error"))
		return
	}
	if err := s.reply(r, &nats.Msg{Data: body}); err != nil {
		s.log.Warn().Ctx(ctx).Err(err).Str("endpoint", name).Msg("reply failed")
	}
}

// handlerContext bounds a handler by the service's own timeout and, when
// the caller said when it gives up, by that deadline less replyMargin: work
// the caller will not wait for (store retries above all) ends in time for
// the answer to reach it. A caller can only shorten its own request.
func handlerContext(h micro.Headers, timeout time.Duration) (context.Context, context.CancelFunc) {
	now := time.Now()
	deadline := now.Add(timeout)
	if ms, err := strconv.ParseInt(h.Get(headerDeadline), 10, 64); err == nil {
		caller := time.UnixMilli(ms)
		// A short request keeps a quarter of its time for the answer.
		margin := min(replyMargin, caller.Sub(now)/4)
		if d := caller.Add(-margin); d.Before(deadline) {
			deadline = d
		}
	}
	return context.WithDeadline(context.Background(), deadline)
}

func (s *Service) respondError(r micro.Request, e *mesh.Error) {
	_ = s.reply(r, errorAnswer(e))
}

// errorAnswer is a service's answer of an error, as Call decodes it.
func errorAnswer(e *mesh.Error) *nats.Msg {
	body, _ := json.Marshal(e)
	msg := &nats.Msg{Header: nats.Header{}, Data: body}
	msg.Header.Set(micro.ErrorHeader, e.Message)
	msg.Header.Set(micro.ErrorCodeHeader, string(e.Code))
	return msg
}

// Answer replies to a request a service took on a subscription of its own
// rather than through Serve (an artifact upload's subject): resp as JSON, or
// err as Call decodes it. Like Serve, it answers only a requester's inbox.
func Answer(nc *nats.Conn, req *nats.Msg, resp any, err error) error {
	if !IsRequesterInbox(req.Reply) {
		return fmt.Errorf("%w: reply subject %q is not a requester's inbox", errNotAnInbox, req.Reply)
	}
	msg := &nats.Msg{}
	if err != nil {
		msg = errorAnswer(mesh.AsError(err))
	} else if msg.Data, err = json.Marshal(resp); err != nil {
		msg = errorAnswer(mesh.Errorf(mesh.CodeInternal, "internal error"))
	}
	msg.Subject = req.Reply
	return nc.PublishMsg(msg)
}

// reply answers a request through the connection. micro's own Respond and
// Error record their outcome on the request, which micro reads as soon as
// the endpoint handler returns — and here the handler returns at once while
// the request is served on its own goroutine, so answering through them races.
func (s *Service) reply(r micro.Request, msg *nats.Msg) error {
	if r.Reply() == "" {
		return nats.ErrMsgNoReply
	}
	if !IsRequesterInbox(r.Reply()) {
		return fmt.Errorf("%w: reply subject %q is not a requester's inbox", errNotAnInbox, r.Reply())
	}
	msg.Subject = r.Reply()
	return s.nc.PublishMsg(msg)
}

var errNotAnInbox = errors.New("request not answered")

// Reply subjects a service answers on.
const (
	// platformInbox is the inbox prefix of the platform's own connections.
	platformInbox = "_INBOX."
	// importReply prefixes the reply subject the NATS server makes up for a
	// request that crossed an account import; the server maps the answer
	// back to the requester's own inbox in the requester's own account.
	importReply = "_R_."
)

// IsRequesterInbox reports whether reply can only reach whoever sent the
// request: a platform connection's inbox, or a reply the server made up for
// a request from another account. Any other reply subject (a bucket key, the
// JetStream API, a service subject) was chosen to make the service publish
// where the requester may not, and is never answered. This holds under the
// accounts (bus.AccountsConfig) as defence in depth.
func IsRequesterInbox(reply string) bool {
	return strings.HasPrefix(reply, platformInbox) || strings.HasPrefix(reply, importReply)
}

// Stop removes the service's endpoints, then waits up to grace for the requests
// already being handled to finish.
func (s *Service) Stop(grace time.Duration) error {
	err := s.svc.Stop()
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done); s.workers.Stop() }()
	select {
	case <-done:
	case <-time.After(grace):
	}
	return err
}
