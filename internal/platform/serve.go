package platform

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/agents"
	"github.com/a2amesh/a2amesh/services/artifacts"
	"github.com/a2amesh/a2amesh/services/gateway"
	"github.com/a2amesh/a2amesh/services/pairing"
	"github.com/a2amesh/a2amesh/services/registry"
	"github.com/a2amesh/a2amesh/services/taskqueue"
	"github.com/nats-io/nkeys"
)

// Services lists what `serve` can run.
var Services = []string{"agents", "pairing", "registry", "taskqueue", "artifacts", "gateway"}

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
	// server's auth_callout issuer (pairing only).
	AuthIssuerSeedFile string
	// OwnerTokenFile, for the gateway, publishes the hash of this owner
	// credential (otherwise a previously stored one is used).
	OwnerTokenFile string
}

// Running is a started service process.
type Running struct {
	conn *bus.Conn
	svc  stopper
	gw   *gateway.Gateway
	cfg  ServeConfig
}

// Serve starts one service against an external NATS server.
func Serve(ctx context.Context, cfg ServeConfig) (*Running, error) {
	cfg.defaults()
	cc := bus.ConnConfig{URL: cfg.NATSURL, Name: "a2a-platform " + cfg.Service, Logger: cfg.Logger}
	if cfg.NATSNkeySeedFile != "" {
		kp, err := readSeed(cfg.NATSNkeySeedFile, "service nkey seed")
		if err != nil {
			return nil, err
		}
		cc.Nkey = kp
	} else {
		cc.User, cc.Password = cfg.NATSUser, cfg.NATSPassword
	}
	conn, err := bus.Connect(ctx, cc)
	if err != nil {
		return nil, err
	}
	if err := bus.Provision(ctx, conn.JS, bus.ProvisionConfig{Replicas: cfg.Replicas, EventRetention: cfg.EventRetention, MaxArtifactBytes: cfg.MaxArtifactBytes}); err != nil {
		conn.Drain(cfg.ShutdownGrace)
		return nil, err
	}
	r := &Running{conn: conn, cfg: cfg}
	if err := r.start(ctx); err != nil {
		conn.Drain(cfg.ShutdownGrace)
		return nil, err
	}
	if err := flushAll(ctx, []*bus.Conn{conn}); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
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
	var svc interface {
		stopper
		Start(context.Context) error
	}
	switch cfg.Service {
	case "agents":
		svc = agents.New(agents.Config{Conn: conn, Logger: log})
	case "pairing":
		issuer, err := readIssuer(cfg.AuthIssuerSeedFile)
		if err != nil {
			return err
		}
		svc = pairing.New(pairing.Config{
			Conn: conn, Logger: log, CodeTTL: cfg.PairingCodeTTL, HeartbeatTimeout: cfg.HeartbeatTimeout,
			Lease: cfg.Lease, NATSURL: cfg.NATSAdvertise, NATSWebSocketURL: cfg.NATSWebSocketAdvertise,
			AuthIssuer: issuer, Platform: meshapi.PlatformInfo{Name: cfg.PlatformName, Origin: cfg.origin()},
		})
	case "registry":
		svc = registry.New(registry.Config{Conn: conn, Logger: log, HeartbeatTimeout: cfg.HeartbeatTimeout})
	case "taskqueue":
		svc = taskqueue.New(taskqueue.Config{Conn: conn, Logger: log, Lease: cfg.Lease, HeartbeatTimeout: cfg.HeartbeatTimeout})
	case "artifacts":
		svc = artifacts.New(artifacts.Config{Conn: conn, Logger: log, MaxBytes: cfg.MaxArtifactBytes})
	case "gateway":
		if cfg.OwnerTokenFile != "" {
			token, err := ReadOwnerToken(cfg.OwnerTokenFile)
			if err != nil {
				return err
			}
			if err := StoreOwnerTokenHash(ctx, conn, token); err != nil {
				return err
			}
		}
		r.gw = gateway.New(gateway.Config{Conn: conn, Logger: log, Addr: cfg.HTTPAddr, MaxArtifactBytes: cfg.MaxArtifactBytes})
		return r.gw.Start(ctx)
	default:
		return fmt.Errorf("unknown service %q (one of %s)", cfg.Service, strings.Join(Services, ", "))
	}
	if err := svc.Start(ctx); err != nil {
		return err
	}
	r.svc = svc
	return nil
}

// HTTPAddr is the gateway's listen address ("" for other services).
func (r *Running) HTTPAddr() string {
	if r.gw == nil {
		return ""
	}
	return r.gw.Addr()
}

// Stop stops the service and drains its connection.
func (r *Running) Stop() {
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
		return nil, fmt.Errorf("pairing needs --auth-issuer-seed-file: the account seed whose public key the NATS server's auth_callout trusts")
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
