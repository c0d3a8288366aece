package platform

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/bus/embedded"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/services/gateway"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"
)

// Platform is a running platform.
type Platform struct {
	cfg      Config
	server   *embedded.Server
	conn     *bus.Conn
	conns    []*bus.Conn
	services []stopper
	gateway  *gateway.Gateway
	ln       net.Listener
	metrics  *prometheus.Registry
	// serviceKey authenticates each service's own connection.
	serviceKey nkeys.KeyPair
	// unlock releases the data dir for another process.
	unlock func()
}

// Up starts an embedded NATS server with JetStream in cfg.DataDir and every
// service around it, and returns once the HTTP API accepts requests.
func Up(ctx context.Context, cfg Config) (*Platform, error) {
	cfg.defaults()
	if cfg.DataDir == "" {
		return nil, fmt.Errorf("platform: a data dir is required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("platform: data dir: %w", err)
	}
	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			unlock()
		}
	}()
	ownerToken, created, err := LoadOrCreateOwnerToken(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("platform: owner credential: %w", err)
	}
	// The callout issuer and the services' key live only as long as this
	// process: nothing outside it needs them.
	issuer, err := nkeys.CreateAccount()
	if err != nil {
		return nil, fmt.Errorf("platform: auth issuer key: %w", err)
	}
	issuerPub, _ := issuer.PublicKey()
	serviceKey, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("platform: service key: %w", err)
	}
	servicePub, _ := serviceKey.PublicKey()
	natsListen := cfg.NATSListen
	if natsListen == "off" {
		natsListen = ""
	}
	p := &Platform{cfg: cfg, serviceKey: serviceKey, metrics: NewMetricsRegistry(), unlock: unlock}
	p.server, err = embedded.Start(embedded.Config{
		StoreDir:        filepath.Join(cfg.DataDir, "jetstream"),
		Listen:          natsListen,
		WebSocketListen: cfg.NATSWebSocketListen,
		MonitorListen:   cfg.NATSMonitorListen,
		Accounts:        bus.AccountsConfig{Services: bus.NATSUser{Nkey: servicePub}, AuthIssuer: issuerPub}.Render(),
		Logger:          cfg.Logger.With().Str("service", "nats").Logger(),
	})
	if err != nil {
		return nil, err
	}
	p.conn, err = bus.Connect(ctx, bus.ConnConfig{
		Server: p.server, Nkey: serviceKey, Name: "a2a-platform",
		Logger: cfg.Logger,
	})
	if err != nil {
		p.server.Shutdown()
		return nil, err
	}
	if err := p.cfg.resolveRegion(p.conn); err != nil {
		p.Stop()
		return nil, err
	}
	if err := p.start(ctx, issuer, ownerToken); err != nil {
		p.Stop()
		return nil, err
	}
	started = true
	if created {
		cfg.Logger.Info().Str("path", OwnerTokenPath(cfg.DataDir)).Msg("created the owner credential; admin commands read it from this file")
	} else {
		cfg.Logger.Info().Str("path", OwnerTokenPath(cfg.DataDir)).Msg("owner credential")
	}
	return p, nil
}

func (p *Platform) start(ctx context.Context, issuer nkeys.KeyPair, ownerToken string) error {
	cfg := p.cfg
	if err := bus.Provision(ctx, p.conn.JS, bus.ProvisionConfig{
		Replicas: cfg.Replicas, EventRetention: cfg.EventRetention, MaxArtifactBytes: cfg.MaxArtifactBytes,
	}); err != nil {
		return err
	}
	if err := StoreOwnerTokenHash(ctx, p.conn, ownerToken); err != nil {
		return err
	}
	// Bind the HTTP API first, so the origin told to adapters is the real
	// address even when the configured port is 0.
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.HTTPAddr, err)
	}
	p.ln = ln
	if !cfg.publicURLSet {
		cfg.PublicURL = "http://" + ln.Addr().String()
		p.cfg.PublicURL = cfg.PublicURL
	}
	natsURL, wsURL := cfg.NATSAdvertise, cfg.NATSWebSocketAdvertise
	if natsURL == "" {
		natsURL = p.server.ClientURL()
	}
	if wsURL == "" {
		wsURL = p.server.WebSocketURL()
	}
	log := cfg.Logger
	reg := p.metrics
	// Each service has its own connection, as it would in its own process: one
	// connection's lock and flusher would otherwise serialise them all.
	conns := map[string]*bus.Conn{}
	for _, name := range Services {
		c, err := bus.Connect(ctx, bus.ConnConfig{Server: p.server, Nkey: p.serviceKey, Name: "a2a-platform " + name, Logger: log})
		if err != nil {
			return err
		}
		conns[name] = c
		p.conns = append(p.conns, c)
	}
	for _, name := range Services {
		if name == bus.ServiceGateway {
			continue
		}
		svc, err := cfg.newService(name, serviceEnv{
			conn: conns[name], log: log.With().Str("service", name).Logger(), metrics: reg,
			issuer: issuer, natsURL: natsURL, wsURL: wsURL,
			// Delegations are A2A calls to this process's own gateway.
			gatewayURL: "http://" + ln.Addr().String(),
		})
		if err != nil {
			return err
		}
		if err := svc.Start(ctx); err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		p.services = append(p.services, svc)
	}
	if err := flushAll(ctx, p.conns); err != nil {
		return err
	}
	p.gateway = gateway.New(gateway.Config{
		Conn: conns[bus.ServiceGateway], Logger: log.With().Str("service", bus.ServiceGateway).Logger(),
		Listener: ln, Metrics: reg, Gatherer: reg, Region: cfg.Region,
		PublicURL: cfg.PublicURL, A2A: cfg.a2aConfig(), Admission: cfg.admissionConfig(), Endpoints: cfg.endpointsConfig(), DownloadsDir: cfg.DownloadsDir, OwnProgramsDir: cfg.OwnProgramsDir,
	})
	if err := p.gateway.Start(ctx); err != nil {
		return err
	}
	return nil
}

// HTTPAddr is the address the HTTP API listens on.
func (p *Platform) HTTPAddr() string { return p.gateway.Addr() }

// NATSURL is the nats:// URL of the embedded server ("" when not listening).
func (p *Platform) NATSURL() string { return p.server.ClientURL() }

// WebSocketURL is the ws:// URL of the embedded server ("" when off).
func (p *Platform) WebSocketURL() string { return p.server.WebSocketURL() }

// MonitorURL is the http:// URL of the embedded server's monitoring ("" when
// off).
func (p *Platform) MonitorURL() string { return p.server.MonitorURL() }

// Metrics is the platform's Prometheus registry (what GET /metrics serves).
func (p *Platform) Metrics() *prometheus.Registry { return p.metrics }

// Region is the region the platform serves (Config.Region, resolved).
func (p *Platform) Region() string { return p.cfg.Region }

// Conn is the platform's own bus connection (for tests and embedding).
func (p *Platform) Conn() *bus.Conn { return p.conn }

// Stop shuts down gracefully: the HTTP API stops taking requests, services
// finish what they are doing, the connection drains, and JetStream flushes
// its files as the server stops.
func (p *Platform) Stop() {
	grace := p.cfg.ShutdownGrace
	if p.gateway != nil {
		p.gateway.Stop(grace)
	}
	if p.ln != nil {
		// Closed already when the gateway served it; not when start-up failed.
		_ = p.ln.Close()
	}
	for i := len(p.services) - 1; i >= 0; i-- {
		p.services[i].Stop(grace)
	}
	for _, c := range p.conns {
		c.Drain(grace)
	}
	if p.conn != nil {
		p.conn.Drain(grace)
	}
	if p.server != nil {
		p.server.Shutdown()
	}
	if p.unlock != nil {
		p.unlock()
	}
}

// StoreOwnerTokenHash records the hash of the owner credential where the
// gateway looks for it. A hash stored already (read from this region's
// copy of the settings) is not written again, so a gateway started while
// the origin, which keeps the settings, is down starts all the same.
func StoreOwnerTokenHash(ctx context.Context, conn *bus.Conn, token string) error {
	if have, err := bus.ReadSetting(ctx, conn.JS, bus.ConfigOwnerTokenHash); err == nil && secret.Equal(string(have), secret.Hash(token)) {
		return nil
	}
	kv, err := conn.JS.KeyValue(ctx, bus.BucketConfig)
	if err != nil {
		return fmt.Errorf("config bucket: %w", err)
	}
	if _, err := kv.Put(ctx, bus.ConfigOwnerTokenHash, []byte(secret.Hash(token))); err != nil {
		return fmt.Errorf("store owner credential hash: %w", err)
	}
	return nil
}
