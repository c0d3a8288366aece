// Package credentials is the credential service: it issues and checks every
// credential the platform hands out and answers the NATS server's auth
// callout. One concept per file: pairing codes, redeemed exactly once for a
// long-lived runtime credential (codes.go, attach.go; seed 001 §3), one active
// runtime per agent and revocation (revoke.go, disconnect.go), agents' A2A API
// keys (a2akeys.go), event-consumer credentials (consumers.go), and the auth
// callout that places each untrusted connection in its account
// (bus.AccountsConfig) with permissions for its own agent only (callout.go).
package credentials

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// DefaultCodeTTL is how long a pairing code stays valid.
const DefaultCodeTTL = 10 * time.Minute

// Config configures the service. Zero values take the documented defaults.
type Config struct {
	Conn   *bus.Conn
	Logger zerolog.Logger
	// CodeTTL is how long a pairing code stays valid. Default 10 minutes.
	CodeTTL time.Duration
	// HeartbeatTimeout is told to runtimes at attach. Default 120s.
	HeartbeatTimeout time.Duration
	// Lease is told to runtimes at attach. Default 60s.
	Lease time.Duration
	// NATSURL and NATSWebSocketURL are advertised to runtimes; empty ones are
	// left out and the runtime uses the HTTP transport.
	NATSURL          string
	NATSWebSocketURL string
	// Region is the region this service serves; NATSURL and
	// NATSWebSocketURL are that region's, recorded for every region's
	// pairing to read. Default bus.DefaultRegion.
	Region string
	// Platform is the public origin identifier runtimes pass to adapters.
	Platform meshapi.PlatformInfo
	// AuthIssuer signs the user JWTs of auth callout replies. Nil disables the
	// callout (the NATS server then admits no runtime connections).
	AuthIssuer nkeys.KeyPair
	// UserJWTTTL bounds one runtime connection's authorisation; a connection
	// re-authenticates (and a revoked credential is refused) when it expires.
	// A revoked credential's connections are also closed at once, on every
	// server (disconnect). Default 15 minutes.
	UserJWTTTL time.Duration
	// SweepInterval is how often expired pairing codes are removed. Default 30s.
	SweepInterval time.Duration
	// Metrics receives the service's metrics; nil records none.
	Metrics prometheus.Registerer
}

func (c *Config) defaults() {
	if c.CodeTTL == 0 {
		c.CodeTTL = DefaultCodeTTL
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = mesh.DefaultHeartbeatTimeout
	}
	if c.Lease == 0 {
		c.Lease = mesh.DefaultLease
	}
	if c.UserJWTTTL == 0 {
		c.UserJWTTTL = 15 * time.Minute
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = 30 * time.Second
	}
	if c.Region == "" {
		c.Region = bus.DefaultRegion
	}
	if c.Platform.Name == "" {
		c.Platform.Name = meshapi.DefaultPlatformName
	}
}

// codeRecord is a pairing code as stored: under the hash of the code.
type codeRecord struct {
	CodeID    string    `json:"code_id"`
	AgentID   string    `json:"agent_id"`
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// credentialRecord maps a credential hash to its runtime.
type credentialRecord struct {
	RuntimeID string `json:"runtime_id"`
	AgentID   string `json:"agent_id"`
}

// runtimeRecord is a runtime as stored; other services read it as mesh.Runtime.
type runtimeRecord struct {
	mesh.Runtime
	TokenHash string `json:"token_hash,omitempty"`
}

// activeRecord names an agent's active runtime.
type activeRecord struct {
	RuntimeID string `json:"runtime_id"`
}

// Service is the credential service.
type Service struct {
	cfg      Config
	codes    *bus.Records[codeRecord]
	creds    *bus.Records[credentialRecord]
	runtimes *bus.Records[runtimeRecord]
	active   *bus.Records[activeRecord]
	agents   *bus.Records[mesh.Agent]
	// consumers holds event consumer credentials.
	consumers *bus.Records[consumerRecord]
	// a2aKeys holds A2A API keys.
	a2aKeys *bus.Records[a2aKeyRecord]
	// regions mirrors every region's NATS URLs (regions.go).
	regions *bus.Mirror[regionRecord, regionRecord]
	// regionRecords reads a region's record the view has not seen yet.
	regionRecords *bus.Records[regionRecord]
	events        *bus.Publisher
	svc           *bus.Service
	authSub       *nats.Subscription
	// sweeper removes expired pairing codes (codes.go).
	sweeper *bus.Periodic
	// widener gives consumer credentials of every agent a consumer on the
	// streams of regions that joined since they were made (consumers.go).
	widener *bus.Periodic
	// stop and wg end and wait for the disconnections of ended credentials
	// (disconnect.go).
	stop chan struct{}
	wg   sync.WaitGroup
}

// New returns a service; Start runs it.
func New(cfg Config) *Service {
	cfg.defaults()
	s := &Service{cfg: cfg, stop: make(chan struct{})}
	s.sweeper = &bus.Periodic{Interval: cfg.SweepInterval, Run: s.sweep}
	s.widener = &bus.Periodic{Interval: consumerWidenInterval, Run: s.widenConsumers}
	return s
}

// Start binds to the bus and starts answering.
func (s *Service) Start(ctx context.Context) error {
	js := s.cfg.Conn.JS
	var err error
	if s.codes, err = bus.OpenRecords[codeRecord](ctx, js, bus.BucketPairing); err != nil {
		return err
	}
	if s.creds, err = bus.OpenRecords[credentialRecord](ctx, js, bus.BucketCredentials); err != nil {
		return err
	}
	if s.runtimes, err = bus.OpenRecords[runtimeRecord](ctx, js, bus.BucketRuntimes); err != nil {
		return err
	}
	if s.active, err = bus.OpenRecords[activeRecord](ctx, js, bus.BucketRuntimes); err != nil {
		return err
	}
	if s.agents, err = bus.OpenRecords[mesh.Agent](ctx, js, bus.BucketAgents); err != nil {
		return err
	}
	if s.consumers, err = bus.OpenRecords[consumerRecord](ctx, js, bus.BucketConsumers); err != nil {
		return err
	}
	if s.a2aKeys, err = bus.OpenRecords[a2aKeyRecord](ctx, js, bus.BucketA2AKeys); err != nil {
		return err
	}
	if err := s.startRegions(ctx); err != nil {
		return err
	}
	s.events = bus.NewPublisher(js, bus.ServiceCredentials).OnPublished(metrics.EventsPublished(s.cfg.Metrics, bus.ServiceCredentials))
	s.svc, err = bus.Serve(s.cfg.Conn.NC, bus.ServiceSpec{
		Name: bus.ServiceCredentials, Logger: s.cfg.Logger,
		Description: "pairing codes, runtime tokens, A2A API keys, event-consumer credentials, the auth callout",

		Endpoints: []bus.Endpoint{
			meshapi.OpRuntimeConnection.Handle(s.handleConnection),
			meshapi.OpPairingIssueCode.Handle(s.handleIssue),
			meshapi.OpPairingAttachRuntime.Handle(s.handleAttach),
			meshapi.OpPairingRevokeRuntime.Handle(s.handleRevoke),
			meshapi.OpPairingAuthenticateRuntime.Handle(s.handleAuthenticate),
			meshapi.OpPairingSealingKeyOf.Handle(s.handleSealingKey),
			meshapi.OpA2AKeysCreate.Handle(s.handleA2AKeyCreate),
			meshapi.OpA2AKeysList.Handle(s.handleA2AKeyList),
			meshapi.OpA2AKeysRevoke.Handle(s.handleA2AKeyRevoke),
			meshapi.OpA2AKeysAuthenticate.Handle(s.handleA2AKeyAuthenticate),
			meshapi.OpConsumersCreate.Handle(s.handleConsumerCreate),
			meshapi.OpConsumersList.Handle(s.handleConsumerList),
			meshapi.OpConsumersDelete.Handle(s.handleConsumerDelete),
		},
	})
	if err != nil {
		return err
	}
	if s.cfg.AuthIssuer != nil {
		s.authSub, err = s.cfg.Conn.NC.QueueSubscribe(bus.AuthCalloutSubject, "credentials-auth", s.onAuthRequest)
		if err != nil {
			return fmt.Errorf("credentials: auth callout subscription: %w", err)
		}
	}
	// ctx bounds the start only: the sweep lives until Stop.
	s.sweeper.Start(context.WithoutCancel(ctx))
	if s.cfg.Conn.NC.ConnectedClusterName() != "" {
		s.widener.Start(context.WithoutCancel(ctx))
	}
	return nil
}

// Stop stops answering and waits up to grace for requests in flight.
func (s *Service) Stop(grace time.Duration) {
	if s.authSub != nil {
		_ = s.authSub.Unsubscribe()
	}
	if s.svc != nil {
		_ = s.svc.Stop(grace)
	}
	s.sweeper.Stop()
	s.widener.Stop()
	close(s.stop)
	s.wg.Wait()
	if s.regions != nil {
		_ = s.regions.Stop()
	}
}

func (s *Service) publish(ctx context.Context, ev bus.Event) {
	if err := s.events.Publish(ctx, ev); err != nil {
		s.cfg.Logger.Error().Ctx(ctx).Err(err).Str("type", ev.Type).Str("subject", ev.Subject).Msg("event not published")
	}
}
