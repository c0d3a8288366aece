package platform

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/services/gateway"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// NewMetricsRegistry returns the one Prometheus registry of a platform
// process, with the Go runtime and process collectors.
func NewMetricsRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// ServeConfig configures one service process against an external NATS.
type ServeConfig struct {
	Config
	// Service is one of Services.
	Service string
	// NATSURL is the external NATS deployment (comma-separated URLs).
	NATSURL string
	// NATSUser and NATSPassword authenticate as a platform service: a user
	// listed in the server's auth_callout auth_users (see deploy/nats).
	NATSUser     string
	NATSPassword string
	// NATSNkeySeedFile holds the user nkey seed of platform services, for a
	// server that lists services by nkey (as `up` does). When set, NATSUser
	// and NATSPassword are not used.
	NATSNkeySeedFile string
	// AuthIssuerSeedFile holds the account nkey seed whose public key is the
	// server's auth_callout issuer (credentials only).
	AuthIssuerSeedFile string
	// OwnerTokenFile, for the gateway, publishes the hash of this owner
	// credential (otherwise OwnerToken's, or a previously stored one, is used).
	OwnerTokenFile string
	// OwnerToken, for the gateway, is the owner credential itself, for
	// deployments that hand secrets over in the environment (a Kubernetes
	// Secret) rather than as a file of mode 0600. OwnerTokenFile wins.
	OwnerToken string
	// GatewayURL, for the delegation service, is where it reaches the
	// gateway's A2A endpoints. Default: the public URL.
	GatewayURL string
	// OriginRegion, when set, is the region that holds the records every
	// region reads (agents, credentials, settings): a process of another
	// region waits until that region has made them instead of making them
	// itself, so which region is the origin does not depend on which
	// starts first (bus.ProvisionConfig.Origin). Unset: the first region to
	// provision. Give every process of every region the same value.
	OriginRegion string
	// MetricsListen, when set, serves this process's Prometheus metrics at
	// http://<MetricsListen>/metrics, and /healthz (the process is alive)
	// and /readyz (NATS connected, every stream provisioned) for probes.
	// Off by default; the gateway also serves them on its own HTTP address.
	MetricsListen string
}

// Running is a started service process.
type Running struct {
	conn    *bus.Conn
	svc     stopper
	gw      *gateway.Gateway
	cfg     ServeConfig
	metrics *prometheus.Registry
	msrv    *http.Server
	mln     net.Listener
	// waiting names what the process waits for before it serves (NATS,
	// JetStream, its service starting); nil once it serves. /readyz
	// answers 503 with it until then.
	waiting atomic.Pointer[string]
	// tending keeps the region's copies of other regions' records and
	// events flowing for as long as the process runs (bus.SourceTending).
	tending *bus.Periodic
}

// What a process waits for before it serves, as /readyz says it.
const (
	waitingNATS      = "nats"
	waitingJetStream = "jetstream"
	waitingStart     = "start"
)

// waitingChecks is what /readyz says of each step while the process waits.
var waitingChecks = map[string]map[string]string{
	waitingNATS:      {"nats": "waiting for a NATS server of --nats-url to take the connection"},
	waitingJetStream: {"nats": "ok", "jetstream": "waiting for JetStream (a cluster still forming, no meta leader, or the origin region's global records) to provision the streams"},
	waitingStart:     {"nats": "ok", "jetstream": "ok", "service": "starting"},
}

// Serve starts one service against an external NATS server. Its health
// endpoints (MetricsListen) answer from the start: /healthz 200 and /readyz
// 503 saying what it waits for while it waits for NATS or JetStream.
func Serve(ctx context.Context, cfg ServeConfig) (*Running, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Running{cfg: cfg, metrics: NewMetricsRegistry()}
	r.setWaiting(waitingNATS)
	if err := r.serveMetrics(); err != nil {
		return nil, err
	}
	if err := r.connectAndStart(ctx); err != nil {
		r.Stop()
		return nil, err
	}
	r.waiting.Store(nil)
	return r, nil
}

func (r *Running) setWaiting(what string) { r.waiting.Store(&what) }

// connectAndStart connects to NATS, provisions and starts the service.
func (r *Running) connectAndStart(ctx context.Context) error {
	cfg := r.cfg
	cc := bus.ConnConfig{URL: cfg.NATSURL, Name: "a2a-platform " + cfg.Service, Logger: cfg.Logger, WaitForServer: true}
	if cfg.NATSNkeySeedFile != "" {
		kp, err := readSeed(cfg.NATSNkeySeedFile, "service nkey seed")
		if err != nil {
			return err
		}
		cc.Nkey = kp
	} else {
		cc.User, cc.Password = cfg.NATSUser, cfg.NATSPassword
	}
	conn, err := bus.Connect(ctx, cc)
	if err != nil {
		return err
	}
	r.conn = conn
	if err := r.cfg.resolveRegion(conn); err != nil {
		return err
	}
	r.setWaiting(waitingJetStream)
	// A cluster still forming is waited for (logged once), not an error:
	// the services and the NATS nodes may start in any order.
	pc := bus.ProvisionConfig{Replicas: cfg.Replicas, EventRetention: cfg.EventRetention, MaxArtifactBytes: cfg.MaxArtifactBytes,
		Origin: cfg.OriginRegion, Logger: cfg.Logger.With().Str("service", cfg.Service).Logger()}
	if err := bus.Provision(ctx, conn.JS, pc); err != nil {
		return err
	}
	r.tending = bus.SourceTending(conn.JS, pc.Logger)
	r.tending.Start(context.Background())
	r.setWaiting(waitingStart)
	if err := r.start(ctx); err != nil {
		return err
	}
	return flushAll(ctx, []*bus.Conn{conn})
}

// flushAll waits until the server has read everything sent on each
// connection: a service's subscriptions exist on the server only from then
// on, and until then a request to it finds no responder.
func flushAll(ctx context.Context, conns []*bus.Conn) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	for _, c := range conns {
		if err := c.NC.FlushWithContext(ctx); err != nil {
			return fmt.Errorf("flush %s: %w", c.NC.Opts.Name, err)
		}
	}
	return nil
}

func (r *Running) start(ctx context.Context) error {
	cfg, conn := r.cfg, r.conn
	log := cfg.Logger.With().Str("service", cfg.Service).Logger()
	env := serviceEnv{
		conn: conn, log: log, metrics: r.metrics,
		natsURL: cfg.NATSAdvertise, wsURL: cfg.NATSWebSocketAdvertise, gatewayURL: cfg.GatewayURL,
	}
	switch cfg.Service {
	case bus.ServiceGateway:
		return r.startGateway(ctx, log)
	case bus.ServiceCredentials:
		issuer, err := readIssuer(cfg.AuthIssuerSeedFile)
		if err != nil {
			return err
		}
		env.issuer = issuer
	case bus.ServiceDelegation:
		if env.gatewayURL == "" {
			env.gatewayURL = cfg.PublicURL
		}
	}
	svc, err := cfg.newService(cfg.Service, env)
	if err != nil {
		return err
	}
	if err := svc.Start(ctx); err != nil {
		return err
	}
	r.svc = svc
	return nil
}

func (r *Running) startGateway(ctx context.Context, log zerolog.Logger) error {
	cfg, conn := r.cfg, r.conn
	token := cfg.OwnerToken
	if cfg.OwnerTokenFile != "" {
		var err error
		if token, err = ReadOwnerToken(cfg.OwnerTokenFile); err != nil {
			return err
		}
	}
	if token != "" {
		if err := StoreOwnerTokenHash(ctx, conn, token); err != nil {
			return err
		}
	}
	gc := gateway.Config{
		Conn: conn, Logger: log, Addr: cfg.HTTPAddr, Region: cfg.Region,
		Metrics: r.metrics, Gatherer: r.metrics, A2A: cfg.a2aConfig(), Admission: cfg.admissionConfig(), Endpoints: cfg.endpointsConfig(),
		DownloadsDir: cfg.DownloadsDir,
	}
	if cfg.publicURLSet {
		// Otherwise the gateway uses the address it listens on.
		gc.PublicURL = cfg.PublicURL
	}
	r.gw = gateway.New(gc)
	return r.gw.Start(ctx)
}

// Region is the region the service serves (Config.Region, resolved).
func (r *Running) Region() string { return r.cfg.Region }

// HTTPAddr is the gateway's listen address ("" for other services).
func (r *Running) HTTPAddr() string {
	if r.gw == nil {
		return ""
	}
	return r.gw.Addr()
}

// serveMetrics serves the process's metrics and health on MetricsListen,
// when set.
func (r *Running) serveMetrics() error {
	if r.cfg.MetricsListen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", r.cfg.MetricsListen)
	if err != nil {
		return fmt.Errorf("metrics listen %s: %w", r.cfg.MetricsListen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(r.metrics, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeHealth(w, http.StatusOK, map[string]any{"ok": true})
	})
	mux.HandleFunc("GET /readyz", r.readyz)
	r.mln = ln
	r.msrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.msrv.Serve(ln) }()
	return nil
}

// readyz says whether the process serves its region (gateway.Readiness),
// or what it still waits for.
func (r *Running) readyz(w http.ResponseWriter, req *http.Request) {
	if what := r.waiting.Load(); what != nil {
		writeHealth(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "service": r.cfg.Service,
			"waiting_for": *what, "checks": waitingChecks[*what]})
		return
	}
	status, body := gateway.Readiness(req.Context(), r.conn)
	body["service"], body["region"] = r.cfg.Service, r.cfg.Region
	writeHealth(w, status, body)
}

func writeHealth(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// MetricsAddr is the address metrics are served on ("" when off).
func (r *Running) MetricsAddr() string {
	if r.mln == nil {
		return ""
	}
	return r.mln.Addr().String()
}

// Stop stops the service and drains its connection.
func (r *Running) Stop() {
	if r.tending != nil {
		r.tending.Stop()
	}
	if r.msrv != nil {
		_ = r.msrv.Close()
	}
	if r.gw != nil {
		r.gw.Stop(r.cfg.ShutdownGrace)
	}
	if r.svc != nil {
		r.svc.Stop(r.cfg.ShutdownGrace)
	}
	r.conn.Drain(r.cfg.ShutdownGrace)
}

func readIssuer(path string) (nkeys.KeyPair, error) {
	if path == "" {
		return nil, fmt.Errorf("credentials needs --auth-issuer-seed-file: the account seed whose public key the NATS server's auth_callout trusts")
	}
	return readSeed(path, "auth issuer seed")
}

// readSeed reads an nkey seed file.
func readSeed(path, what string) (nkeys.KeyPair, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(b))))
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %w", what, path, err)
	}
	return kp, nil
}
