// Package gateway is the platform's HTTP front end: the REST API for people
// (agents, pairing codes, conversations, task runs, artifacts, events) and for
// runtimes (seed 001's attach / heartbeat / pull / progress / complete / fail /
// artifacts), and the web page people use (web/, signed in with sessions kept
// on the bus: webroutes.go). Every route translates to service calls on the
// bus; the gateway holds no state of its own, so any number of copies can run.
package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/runfollow"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/a2aserver"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
	"github.com/a2amesh/a2amesh/services/gateway/inflight"
	"github.com/a2amesh/a2amesh/services/internal/homes"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Config configures the gateway. Zero values take the documented defaults.
type Config struct {
	Conn   *bus.Conn
	Logger zerolog.Logger
	// Region is the region the gateway serves in: the events of its
	// agents' runs are read from its own event stream.
	Region string
	// Addr is the listen address. Default 127.0.0.1:3000 (seed 000's local API base).
	Addr string
	// Listener, when set, is used instead of listening on Addr.
	Listener net.Listener
	// MaxBodyBytes bounds request bodies other than artifact uploads and
	// the A2A endpoint's. Default mesh.MaxInputBytes: what they carry
	// becomes a run's input.
	MaxBodyBytes int64
	// LargeBodies bounds the large request bodies the process handles at
	// once, at every door (inflight.Config's defaults).
	LargeBodies inflight.Config
	// MaxPullWait caps a long-poll pull. Default 30s.
	MaxPullWait time.Duration
	// SSEHeartbeat is the interval of keep-alive comments on event streams.
	// Default mesh.DefaultKeepAlive, below common proxy idle timeouts.
	SSEHeartbeat time.Duration
	// Metrics receives the gateway's HTTP metrics; nil records none.
	Metrics prometheus.Registerer
	// Gatherer is what GET /metrics serves (the process's registry); nil
	// answers 404 there.
	Gatherer prometheus.Gatherer
	// PublicURL is how people reach the gateway: the base of sign-in links
	// and the API base the web page puts in connection instructions. An
	// https URL makes the sign-in cookie Secure. Default http://<listen address>.
	PublicURL string
	// SignInLinkTTL is how long a sign-in link works. Default 2 minutes.
	SignInLinkTTL time.Duration
	// SessionIdle ends a web sign-in session unused for this long. Default 12h.
	SessionIdle time.Duration
	// SessionMaxAge ends a web sign-in session this long after sign-in,
	// however much it is used. Default 7 days (the sessions bucket keeps
	// nothing longer).
	SessionMaxAge time.Duration
	// A2A configures every agent's A2A endpoint (a2a.go); the gateway fills in
	// the bus, the public URL and the owner check.
	A2A a2aserver.Config
	// Admission configures who may call the A2A endpoints and how often
	// (a2a.go); the gateway fills in the bus, the signer and the owner check.
	Admission admission.Config
	// Endpoints configures the older A2A endpoints (partner routes, envelope protocol: endpoints.go).
	Endpoints EndpointsConfig
	// DownloadsDir holds the runtime and adapter programs GET /install.sh
	// installs (`make dist`); empty or missing offers none (downloads.go).
	DownloadsDir string
	// OwnProgramsDir holds a2a-runtime and a2a-adapter for the platform's
	// own system, offered when DownloadsDir offers nothing (downloads.go).
	OwnProgramsDir string
}

func (c *Config) defaults() {
	c.Addr = cmp.Or(c.Addr, mesh.DefaultAPIAddr)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, mesh.MaxInputBytes)
	c.MaxPullWait = cmp.Or(c.MaxPullWait, 30*time.Second)
	c.SSEHeartbeat = cmp.Or(c.SSEHeartbeat, mesh.DefaultKeepAlive)
	c.SignInLinkTTL = cmp.Or(c.SignInLinkTTL, 2*time.Minute)
	c.SessionIdle = cmp.Or(c.SessionIdle, 12*time.Hour)
	c.SessionMaxAge = cmp.Or(c.SessionMaxAge, 7*24*time.Hour)
}

// Gateway is the HTTP front end.
type Gateway struct {
	cfg    Config
	log    zerolog.Logger
	client *meshapi.Client
	js     jetstream.JetStream
	// runs follows runs on the event streams, for every endpoint that
	// streams or waits for them: an agent's in its home region's stream.
	runs *runfollow.Regions
	// homes says where each agent is homed.
	homes *homes.Directory
	// sse is the latest events as GET /events sends them, encoded once
	// for every stream.
	sse   sseStreams
	owner *ownerAuth
	// rtAuth admits runtime credentials (runtimeauth.go).
	rtAuth  *runtimeAuth
	srv     *http.Server
	ln      net.Listener
	closing chan struct{}
	once    sync.Once
	metrics *httpMetrics
	routes  []string
	// Web sign-in (webroutes.go).
	sessions      *webSessions
	publicURL     string
	secureCookies bool
	crossOrigin   *http.CrossOriginProtection
	// a2a is every agent's A2A endpoint (a2a.go).
	a2a *a2aserver.Server
	// admission authenticates the callers of every A2A endpoint (a2a.go).
	admission *admission.Admission
	// endpoints are the older A2A endpoints (endpoints.go).
	endpoints *endpoints
	// bodies hands out the turns of large request bodies (middleware.go).
	bodies *inflight.Limiter
}

// New returns a gateway; Start serves it.
func New(cfg Config) *Gateway {
	cfg.defaults()
	return &Gateway{cfg: cfg, log: cfg.Logger, closing: make(chan struct{}), metrics: newHTTPMetrics(cfg.Metrics)}
}

// Start binds the listener and serves in the background.
func (g *Gateway) Start(ctx context.Context) error {
	g.client = meshapi.NewClient(g.cfg.Conn.NC)
	g.js = g.cfg.Conn.JS
	var err error
	if g.bodies, err = inflight.New(g.cfg.LargeBodies); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	// Fed by the A2A endpoint's view of the agents (startA2A), which is
	// loaded before the listener serves.
	if g.homes, err = homes.Fed(ctx, g.js, g.cfg.Region, g.log); err != nil {
		return err
	}
	g.runs = runfollow.NewRegions(g.cfg.Conn, runfollow.Config{}, g.homes.Of)
	if g.owner, err = newOwnerAuth(ctx, g.js, g.log); err != nil {
		return err
	}
	if g.rtAuth, err = newRuntimeAuth(ctx, g.js, g.client, g.log); err != nil {
		return err
	}
	if g.sessions, err = openWebSessions(ctx, g.js, g.cfg.SessionIdle, g.cfg.SessionMaxAge); err != nil {
		return err
	}
	g.ln = g.cfg.Listener
	if g.ln == nil {
		if g.ln, err = net.Listen("tcp", g.cfg.Addr); err != nil {
			return fmt.Errorf("gateway: listen %s: %w", g.cfg.Addr, err)
		}
	}
	if err := g.usePublicURL(); err != nil {
		return err
	}
	if err := g.startA2A(ctx); err != nil {
		return err
	}
	if err := g.startEndpoints(ctx); err != nil {
		return err
	}
	g.srv = &http.Server{
		Handler:           g.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          nil,
	}
	go func() {
		if err := g.srv.Serve(g.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.log.Error().Err(err).Msg("http server stopped")
		}
	}()
	return nil
}

// Addr is the address the gateway listens on (useful with port 0).
func (g *Gateway) Addr() string { return g.ln.Addr().String() }

// Stop stops taking requests, ends event streams and long polls, and waits up
// to grace for requests in flight.
func (g *Gateway) Stop(grace time.Duration) {
	g.once.Do(func() { close(g.closing) })
	if g.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		_ = g.srv.Shutdown(ctx)
	}
	if g.owner != nil {
		g.owner.stop()
	}
	g.homes.Stop()
	if g.rtAuth != nil {
		g.rtAuth.stop()
	}
	g.stopA2A()
}

// Routes lists the patterns of every route the gateway serves, in the
// ServeMux syntax ("POST /task-runs/{taskRunId}/complete"). The OpenAPI
// document is checked against it.
func (g *Gateway) Routes() []string {
	g.routes = nil
	g.Handler()
	return append([]string(nil), g.routes...)
}

// handle registers an open route (no credential).
func (g *Gateway) handle(mux *http.ServeMux, pattern string, h http.Handler) {
	// "GET /{$}" (the root only) is "GET /" to the OpenAPI document.
	g.routes = append(g.routes, strings.TrimSuffix(pattern, "{$}"))
	mux.Handle(pattern, h)
}

// Handler returns the gateway's routes.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	// Health and metrics (no credential: see docs/operations.md).
	g.handle(mux, "GET /healthz", http.HandlerFunc(g.healthz))
	g.handle(mux, "GET /readyz", http.HandlerFunc(g.readyz))
	g.handle(mux, "GET /metrics", g.metricsHandler())

	// The API documents and event schemas (apidocs.go).
	g.apiDocRoutes(mux)

	// People (owner credential).
	// Agent accounts, conversations, a run and its cancel, webhooks and
	// consumer credentials are operations of the table, served by the
	// bridge (bridgeRoutes, below).
	g.people(mux, meshapi.OpPairingIssueCode.REST.Pattern(), g.issuePairingCode)
	g.people(mux, meshapi.OpRegistryListRuntimes.REST.Pattern(), g.listRuntimes)
	g.people(mux, meshapi.OpPairingRevokeRuntime.REST.Pattern(), g.revokeRuntime)
	g.people(mux, meshapi.OpTaskRunsCreate.REST.Pattern(), g.createTaskRun)
	g.people(mux, meshapi.OpTaskRunsContinue.REST.Pattern(), g.answerTaskRun)
	g.people(mux, meshapi.OpTaskRunsDecideApproval.REST.Pattern(), g.decideApproval)
	g.people(mux, meshapi.OpArtifactsList.REST.Pattern(), g.listArtifacts)
	g.people(mux, "GET /artifacts/{artifactId}/content", g.downloadArtifact)
	g.people(mux, "GET /events", g.streamEvents)

	// Runtimes (seed 001 REST contract; X-Runtime-Token). The attach, whose
	// pairing code is the credential, is bridged (open).
	g.runtime(mux, "POST /agent-runtimes/runtime/revoke", g.revokeSelf)
	g.runtime(mux, "GET /agent-runtimes/runtime/events", g.streamRuntimeEvents)
	// The runtime operations of the table (meshapi.Ops): those that only
	// forward are bridged (bridge.go), the others written by hand.
	g.bridgeRoutes(mux)
	g.runtime(mux, meshapi.OpRuntimeHeartbeat.REST.Pattern(), g.heartbeat)
	g.runtime(mux, meshapi.OpRuntimePull.REST.Pattern(), g.pull)
	g.runtime(mux, meshapi.OpRuntimeRenew.REST.Pattern(), g.renew)
	g.runtime(mux, meshapi.OpRuntimeRelease.REST.Pattern(), g.release)
	g.runtime(mux, meshapi.OpRuntimeArtifactOpen.REST.Pattern(), g.uploadArtifact)

	// The web page and sign-in (webroutes.go).
	g.webRoutes(mux)

	// Every agent's A2A endpoint (a2a.go).
	g.a2aRoutes(mux)

	// Delegation, the partner routes and the envelope protocol (endpoints.go).
	g.endpointRoutes(mux)

	// The install script and the programs it fetches (downloads.go).
	g.downloadRoutes(mux)

	return g.middleware(g.fallback(mux))
}

// fallback turns the mux's plain-text 404 and 405 answers into JSON errors.
func (g *Gateway) fallback(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		setRoute(r, pattern)
		if pattern != "" {
			// Serve through the mux so it fills in the path values.
			mux.ServeHTTP(w, r)
			return
		}
		rec := &statusProbe{header: http.Header{}}
		h.ServeHTTP(rec, r)
		switch rec.status {
		case http.StatusMethodNotAllowed:
			w.Header().Set("Allow", rec.header.Get("Allow"))
			g.writeError(w, r, mesh.Errorf(mesh.CodeMethodNotAllowed, "method %s is not allowed on %s", r.Method, r.URL.Path))
		default:
			g.writeError(w, r, mesh.Errorf(mesh.CodeNotFound, "no route for %s %s", r.Method, r.URL.Path))
		}
	})
}

// statusProbe captures what the mux would answer without writing it.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header         { return p.header }
func (p *statusProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *statusProbe) WriteHeader(status int)      { p.status = status }
