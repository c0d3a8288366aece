package platform

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/agents"
	"github.com/a2amesh/a2amesh/services/artifacts"
	"github.com/a2amesh/a2amesh/services/credentials"
	"github.com/a2amesh/a2amesh/services/delegation"
	"github.com/a2amesh/a2amesh/services/registry"
	"github.com/a2amesh/a2amesh/services/taskqueue"
	"github.com/a2amesh/a2amesh/services/webhooks"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// BusServices lists the services that answer on the bus (NATS service
// discovery names them): every one `serve` can run but the HTTP gateway.
var BusServices = []string{
	bus.ServiceAgents, bus.ServiceCredentials, bus.ServiceRegistry, bus.ServiceTaskQueue,
	bus.ServiceArtifacts, bus.ServiceWebhooks, bus.ServiceDelegation,
}

// Services lists what `serve` can run.
var Services = append(slices.Clone(BusServices), bus.ServiceGateway)

// stopper is a started service.
type stopper interface{ Stop(grace time.Duration) }

// service is one of Services other than the gateway, not yet started.
type service interface {
	stopper
	Start(context.Context) error
}

// serviceEnv is what a service needs beyond the platform's configuration:
// its connection, logger and metrics, and what `up` and `serve` learn
// differently.
type serviceEnv struct {
	conn    *bus.Conn
	log     zerolog.Logger
	metrics prometheus.Registerer
	// issuer signs the auth callout's answers (credentials).
	issuer nkeys.KeyPair
	// natsURL and wsURL are told to runtimes at pairing.
	natsURL, wsURL string
	// gatewayURL is where the delegation service reaches the A2A endpoints.
	gatewayURL string
}

// newService builds the named service; the gateway is built apart, as it
// also serves HTTP.
func (c *Config) newService(name string, env serviceEnv) (service, error) {
	conn, log, reg := env.conn, env.log, env.metrics
	switch name {
	case bus.ServiceAgents:
		return agents.New(agents.Config{Conn: conn, Logger: log, Metrics: reg, Region: c.Region}), nil
	case bus.ServiceCredentials:
		return credentials.New(credentials.Config{
			Conn: conn, Logger: log, CodeTTL: c.PairingCodeTTL, HeartbeatTimeout: c.HeartbeatTimeout, Lease: c.Lease,
			NATSURL: env.natsURL, NATSWebSocketURL: env.wsURL, Region: c.Region, AuthIssuer: env.issuer,
			Platform: meshapi.PlatformInfo{Name: c.PlatformName, Origin: c.origin()}, Metrics: reg,
		}), nil
	case bus.ServiceRegistry:
		return registry.New(registry.Config{Conn: conn, Logger: log, HeartbeatTimeout: c.HeartbeatTimeout, Metrics: reg, Region: c.Region}), nil
	case bus.ServiceTaskQueue:
		return taskqueue.New(taskqueue.Config{Conn: conn, Logger: log, Lease: c.Lease, HeartbeatTimeout: c.HeartbeatTimeout, Metrics: reg, Region: c.Region}), nil
	case bus.ServiceArtifacts:
		return artifacts.New(artifacts.Config{Conn: conn, Logger: log, MaxBytes: c.MaxArtifactBytes, Metrics: reg, Region: c.Region}), nil
	case bus.ServiceWebhooks:
		return webhooks.New(webhooks.Config{
			Conn: conn, Logger: log, AllowPrivate: c.AllowPrivateWebhooks, Metrics: reg, PublicURL: c.PublicURL, Region: c.Region,
			AttemptTimeout: c.WebhookAttemptTimeout, RetryMin: c.WebhookRetryMin, RetryMax: c.WebhookRetryMax, RetryFor: c.WebhookRetryFor,
		}), nil
	case bus.ServiceDelegation:
		return delegation.New(delegation.Config{
			Conn: conn, Logger: log, Region: c.Region, GatewayURL: env.gatewayURL, MaxDepth: c.DelegationMaxDepth, Lease: c.Lease,
			AllowPrivate: c.AllowPrivateWebhooks,
		}), nil
	}
	return nil, fmt.Errorf("unknown service %q (one of %s)", name, strings.Join(Services, ", "))
}
