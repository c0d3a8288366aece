// Package a2aserver is the gateway's A2A endpoint: every agent account speaks
// the A2A standard under /a2a/{agentId}, versions 1.0 and 0.3, over JSON-RPC
// and HTTP+JSON, with its agent card, streaming, push notifications, API
// keys and bearer tokens, scopes and a rate limit.
//
// The protocol is the official Go SDK's (github.com/a2aproject/a2a-go/v2):
// its transports (JSON-RPC, REST and the 0.3 compatibility servers) decode
// and encode every request, its types carry every value, its card
// conversion makes the card readable by 0.3 and 1.0 clients. Underneath, an
// A2A task is a task run: the run record is the only truth about a task's
// state, so any gateway instance, before or after a restart, answers for any
// task, and a task created through any endpoint can be watched through this one.
// The SDK's own request handler keeps executions in the memory of the
// process that accepted them, which a run outlives; this package therefore
// implements a2asrv.RequestHandler over task runs (handler.go), built from
// the SDK's extension points: a taskstore.Store over run records and the A2A
// bucket (store.go), an eventqueue.Manager over the event stream (queue.go)
// and an AgentExecutor that creates a run and follows its events
// (executor.go). docs/a2a.md tells the whole story.
package a2aserver

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/internal/runfollow"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
	"github.com/a2amesh/a2amesh/services/internal/homes"
)

// Config configures the A2A endpoint. Zero values take the documented defaults.
type Config struct {
	Client *meshapi.Client
	JS     jetstream.JetStream
	// Homes tells an agent's home region, whose A2A bucket keeps its
	// tasks; the endpoint's view of the agents feeds it (homes.Fed). Nil:
	// every agent's are kept in this region's.
	Homes *homes.Directory
	// Runs follows the runs of tasks a caller streams or waits for.
	Runs   *runfollow.Regions
	Logger zerolog.Logger
	// PublicURL is how A2A clients reach the platform: the base of every
	// URL in agent cards and of artifact links. Required.
	PublicURL string
	// Version is the platform version agent cards show. Default mesh.DefaultVersion.
	Version string
	// Admission authenticates callers and keeps their rate limits (set by
	// the gateway, shared with its other A2A endpoints).
	Admission *admission.Admission
	// BlockingWait bounds a blocking message/send: past it the task is
	// answered as it is. Default 60s.
	BlockingWait time.Duration
	// OfflineWait is how long a blocking send waits for a runtime to claim
	// the task before it looks whether the agent's runtime is online at
	// all; if not, the submitted task is the answer. Default 3s.
	OfflineWait time.Duration
	// MaxFileBytes bounds one inline file part. Default mesh.MaxFileBytes.
	MaxFileBytes int64
	// MaxBodyBytes bounds the body of a caller with a credential. Default
	// mesh.MaxBodyBytes (room for an inline file as base64).
	MaxBodyBytes int64
	// MaxAnonymousBodyBytes bounds the body of a caller without one (of a
	// public agent). Default mesh.MaxAnonymousBodyBytes.
	MaxAnonymousBodyBytes int64
	// NoPush turns push notifications off (agent cards say so, and the
	// push configuration methods answer PushNotificationNotSupported), for
	// operators who want no calls out of the platform.
	NoPush bool
	// KeepAlive is the interval of keep-alive comments on event streams.
	// Default mesh.DefaultKeepAlive.
	KeepAlive time.Duration
	// WriteError answers the endpoint's platform-REST routes (API keys) in the
	// gateway's error shape.
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
	// Closing, when closed, ends the endpoint's event streams (the gateway is
	// shutting down and waits for requests in flight).
	Closing <-chan struct{}
}

func (c *Config) defaults() {
	c.Version = cmp.Or(c.Version, mesh.DefaultVersion)
	c.BlockingWait = cmp.Or(c.BlockingWait, mesh.DefaultBlockingWait)
	c.OfflineWait = cmp.Or(c.OfflineWait, 3*time.Second)
	c.MaxFileBytes = cmp.Or(c.MaxFileBytes, mesh.MaxFileBytes)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, mesh.MaxBodyBytes)
	c.MaxAnonymousBodyBytes = cmp.Or(c.MaxAnonymousBodyBytes, mesh.MaxAnonymousBodyBytes)
	c.KeepAlive = cmp.Or(c.KeepAlive, mesh.DefaultKeepAlive)
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
}

// Server is the A2A endpoint of every agent.
type Server struct {
	cfg       Config
	log       zerolog.Logger
	client    *meshapi.Client
	js        jetstream.JetStream
	records   *records
	agents    *bus.Mirror[mesh.Agent, *mesh.Agent]
	admission *admission.Admission
	cards     *cardCache
	handler   *handler
	closing   chan struct{}
	jsonrpc   map[string]http.Handler // by version
	rest      map[string]http.Handler // by version
	download  a2atask.ArtifactURL
}

// New returns a server; Start readies it.
func New(cfg Config) *Server {
	cfg.defaults()
	return &Server{cfg: cfg, log: cfg.Logger, closing: make(chan struct{})}
}

// Start opens the A2A bucket, loads the agents, the signing key and (when
// configured) the identity provider's keys, and builds the transports.
func (s *Server) Start(ctx context.Context) error {
	if s.cfg.PublicURL == "" {
		return fmt.Errorf("a2a: a public URL is required (agent cards give absolute URLs)")
	}
	s.client, s.js = s.cfg.Client, s.cfg.JS
	var err error
	if s.records, err = openRecords(ctx, s.js, s.cfg.Homes); err != nil {
		return err
	}
	s.agents, err = bus.StartMirror(ctx, s.js, bus.BucketAgents, bus.MirrorConfig[mesh.Agent, *mesh.Agent]{
		Project: func(_ string, a *mesh.Agent, rev uint64) (*mesh.Agent, bool) { a.Revision = rev; return a, true },
		OnChange: func(id string, a **mesh.Agent) {
			if s.cfg.Homes == nil {
				return
			}
			if a == nil {
				s.cfg.Homes.Observe(id, nil)
				return
			}
			s.cfg.Homes.Observe(id, &(*a).HomeRegion)
		},
		Logger: s.log,
	})
	if err != nil {
		return err
	}
	if err := s.agents.WaitReady(ctx); err != nil {
		return fmt.Errorf("a2a: load agents: %w", err)
	}
	s.admission = s.cfg.Admission
	s.cards = newCardCache()
	s.download = a2atask.DownloadURL(s.cfg.PublicURL)
	s.handler = newHandler(s)
	opts := []a2asrv.TransportOption{
		a2asrv.WithTransportKeepAlive(s.cfg.KeepAlive),
		a2asrv.WithTransportPanicHandler(s.panicked),
	}
	s.jsonrpc = map[string]http.Handler{
		a2atask.Version10: a2asrv.NewJSONRPCHandler(s.handler, opts...),
		a2atask.Version03: a2av0.NewJSONRPCHandler(s.handler, opts...),
	}
	s.rest = map[string]http.Handler{
		a2atask.Version10: a2asrv.NewRESTHandler(s.handler, opts...),
		a2atask.Version03: a2av0.NewRESTHandler(s.handler, opts...),
	}
	return nil
}

// Stop ends event streams.
func (s *Server) Stop() {
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	if s.agents != nil {
		_ = s.agents.Stop()
	}
}

// panicked turns a panic in a transport into an internal error, logged.
func (s *Server) panicked(r any) error {
	s.log.Error().Interface("panic", r).Msg("a2a handler panicked")
	return a2aInternal
}

// agentURL is an agent's A2A endpoint.
func (s *Server) agentURL(agentID string) string { return AgentURL(s.cfg.PublicURL, agentID) }

// AgentURL is the A2A endpoint of an agent on the platform at publicURL.
func AgentURL(publicURL, agentID string) string {
	return strings.TrimRight(publicURL, "/") + "/a2a/" + agentID
}

// agent returns an agent account: from the mirror, or the agents service
// for one created through another instance a moment ago.
func (s *Server) agent(ctx context.Context, id string) (*mesh.Agent, error) {
	if !mesh.ValidID(id) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "agent %q not found", id)
	}
	if a, ok := s.agents.Get(id); ok {
		return a, nil
	}
	return s.client.GetAgent(ctx, id)
}
