// Package platform assembles A2A Mesh's services into a running platform:
// Up runs every service around an embedded NATS server (the one-command
// default), Serve runs one service against an external NATS deployment.
package platform

import (
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/credentials"
	"github.com/a2amesh/a2amesh/services/delegation"
	"github.com/a2amesh/a2amesh/services/gateway"
	"github.com/a2amesh/a2amesh/services/gateway/a2aserver"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
	"github.com/a2amesh/a2amesh/services/gateway/partner"
	"github.com/rs/zerolog"
)

// Config configures a platform. Zero values take the documented defaults.
type Config struct {
	// DataDir holds JetStream's files and the owner credential. Required.
	DataDir string
	// HTTPAddr is where the HTTP API listens. Default 127.0.0.1:3000.
	HTTPAddr string
	// PublicURL is how people and runtimes reach the HTTP API; it is printed
	// in instructions and its host is the platform origin passed to adapters.
	// Default http://<HTTPAddr>.
	PublicURL string
	// NATSListen exposes the embedded NATS server to runtimes and `serve`
	// processes. Default 127.0.0.1:4222; "off" keeps it in-process only.
	NATSListen string
	// NATSWebSocketListen exposes NATS over WebSocket; empty disables it.
	NATSWebSocketListen string
	// NATSMonitorListen serves the embedded NATS server's HTTP monitoring
	// (/varz, /jsz, /connz) for the NATS exporters; empty disables it.
	NATSMonitorListen string
	// NATSAdvertise and NATSWebSocketAdvertise override the URLs runtimes are
	// told at pairing (needed when listening on 0.0.0.0 or behind a proxy).
	NATSAdvertise          string
	NATSWebSocketAdvertise string
	// HeartbeatTimeout: a runtime is offline after this long without a
	// heartbeat. Default 120s (seed 001 §4.2).
	HeartbeatTimeout time.Duration
	// Lease: a claimed run fails (or is retried) this long after its runtime
	// stops renewing. Default 60s.
	Lease time.Duration
	// PairingCodeTTL: how long a pairing code stays valid. Default 10 minutes.
	PairingCodeTTL time.Duration
	// EventRetention: how long events are kept. Default 7 days.
	EventRetention time.Duration
	// Replicas of every stream, bucket and object store: 1 on one server, 3 on
	// a cluster. Default 1.
	Replicas int
	// MaxArtifactBytes bounds one artifact. Default 25 MiB.
	MaxArtifactBytes int64
	// PlatformName is told to adapters in every task (seed 000). Default "A2A Mesh".
	PlatformName string
	// ShutdownGrace bounds a graceful stop. Default 10s.
	ShutdownGrace time.Duration
	// AllowPrivateWebhooks lets webhook URLs reach loopback, private and
	// link-local addresses. Off by default, so a webhook cannot be used to
	// probe the network the platform runs in.
	AllowPrivateWebhooks bool
	// Webhook delivery timings; zero values take the webhooks service's
	// defaults (10s per attempt, retries from 5s doubling to 1h, for 24h).
	WebhookAttemptTimeout time.Duration
	WebhookRetryMin       time.Duration
	WebhookRetryMax       time.Duration
	WebhookRetryFor       time.Duration
	// A2A settings of every agent's A2A endpoint; zero values take the endpoint's
	// defaults (see a2aserver.Config).
	A2ARateLimitPerMinute int
	A2AJWKSURL            string
	A2AJWTIssuer          string
	A2AJWTAudience        string
	A2ADisablePush        bool
	A2ABlockingWait       time.Duration
	A2AOfflineWait        time.Duration
	// DelegationMaxDepth bounds a delegation chain (agents that delegated,
	// one after another). Default 3.
	DelegationMaxDepth int
	// The partner routes' card and URLs (seed 003; A2A_BASE_URL,
	// A2A_WEBHOOK_URL, A2A_HEALTH_URL); zero values take the partner
	// endpoint's defaults.
	A2ACardID     string
	A2ACardName   string
	A2ABaseURL    string
	A2AWebhookURL string
	A2AHealthURL  string
	// Region is the region this platform process serves: the home region
	// of the agents it creates without one. Default: the name of the NATS
	// cluster it connects to (each region of a supercluster is one
	// cluster), or bus.DefaultRegion on a server in no cluster (the
	// embedded server of `up`). Resolved when the platform starts.
	Region string
	// DownloadsDir holds the runtime and adapter programs the gateway offers
	// at GET /install.sh (`make dist` fills it). Default <DataDir>/downloads.
	DownloadsDir string
	// OwnProgramsDir, when set, holds a2a-runtime and a2a-adapter built for
	// the platform's own system (beside a2a-platform, as `make build` puts
	// them): offered at GET /install.sh when DownloadsDir offers nothing,
	// so the quick start's platform installs runtimes on its own system
	// with no extra build. Empty offers none.
	OwnProgramsDir string
	Logger         zerolog.Logger

	publicURLSet bool
}

// Defaults is the configuration of a platform given no settings: the
// defaults of `a2a-platform up` and `serve`, which their flags show.
func Defaults() Config {
	var c Config
	c.defaults()
	return c
}

// defaults fills in what is not set. Each value is the one its component
// applies itself (mesh, bus and the services define them), so a platform
// configured here and a component given nothing agree.
func (c *Config) defaults() {
	if c.HTTPAddr == "" {
		c.HTTPAddr = mesh.DefaultAPIAddr
	}
	if c.PublicURL == "" {
		c.PublicURL = "http://" + c.HTTPAddr
	} else {
		c.publicURLSet = true
	}
	if c.NATSListen == "" {
		c.NATSListen = "127.0.0.1:4222"
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = mesh.DefaultHeartbeatTimeout
	}
	if c.Lease == 0 {
		c.Lease = mesh.DefaultLease
	}
	if c.PairingCodeTTL == 0 {
		c.PairingCodeTTL = credentials.DefaultCodeTTL
	}
	if c.PlatformName == "" {
		c.PlatformName = meshapi.DefaultPlatformName
	}
	if c.EventRetention == 0 {
		c.EventRetention = bus.DefaultEventRetention
	}
	if c.MaxArtifactBytes == 0 {
		c.MaxArtifactBytes = bus.DefaultMaxArtifactBytes
	}
	if c.A2ARateLimitPerMinute == 0 {
		c.A2ARateLimitPerMinute = admission.DefaultRateLimitPerMinute
	}
	if c.A2ABlockingWait == 0 {
		c.A2ABlockingWait = mesh.DefaultBlockingWait
	}
	if c.DelegationMaxDepth == 0 {
		c.DelegationMaxDepth = delegation.DefaultMaxDepth
	}
	if c.A2ACardID == "" {
		c.A2ACardID = partner.DefaultCardID
	}
	if c.A2ACardName == "" {
		c.A2ACardName = partner.DefaultCardName
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = 10 * time.Second
	}
	if c.DownloadsDir == "" && c.DataDir != "" {
		c.DownloadsDir = filepath.Join(c.DataDir, "downloads")
	}
}

// resolveRegion settles the region once connected to NATS (see Region).
func (c *Config) resolveRegion(conn *bus.Conn) error {
	region, err := bus.ResolveRegion(c.Region, conn.NC.ConnectedClusterName())
	if err != nil {
		return fmt.Errorf("platform: %w", err)
	}
	c.Region = region
	return nil
}

// Version is the platform's version, which agent cards show. Builds set it
// with -ldflags "-X github.com/a2amesh/a2amesh/internal/platform.Version=...".
var Version = "0.5.0-dev"

// a2aConfig is the A2A endpoint's configuration from the platform's; the
// gateway fills in the rest.
func (c *Config) a2aConfig() a2aserver.Config {
	return a2aserver.Config{
		Version: Version, NoPush: c.A2ADisablePush, BlockingWait: c.A2ABlockingWait, OfflineWait: c.A2AOfflineWait,
	}
}

// admissionConfig is who may call the A2A endpoints and how often, from the
// platform's configuration; the gateway fills in the rest.
func (c *Config) admissionConfig() admission.Config {
	return admission.Config{
		RateLimitPerMinute: c.A2ARateLimitPerMinute,
		JWKSURL:            c.A2AJWKSURL, JWTIssuer: c.A2AJWTIssuer, JWTAudience: c.A2AJWTAudience,
	}
}

// endpointsConfig is the older A2A endpoints' configuration from the platform's.
func (c *Config) endpointsConfig() gateway.EndpointsConfig {
	return gateway.EndpointsConfig{Partner: partner.Config{
		CardID: c.A2ACardID, CardName: c.A2ACardName, BaseURL: c.A2ABaseURL, WebhookURL: c.A2AWebhookURL, HealthURL: c.A2AHealthURL,
	}}
}

// origin is the host of the public URL: the platform origin of seed 000.
func (c *Config) origin() string {
	u, err := url.Parse(c.PublicURL)
	if err != nil || u.Host == "" {
		return c.PublicURL
	}
	return u.Host
}
