// Package admission decides who may call the gateway's A2A endpoints (an
// agent's A2A endpoint, the partner endpoint, the envelope endpoint) and how
// often: it authenticates a request's credential into a Caller (API key,
// owner credential, platform-signed JWT, identity-provider JWT, or none),
// says which agents and tasks that caller reaches (Caller.Reaches,
// Caller.Sees), counts its requests against the rate limit, and keeps the
// conversations that the ids callers choose at the partner and envelope
// endpoints stand for. Every endpoint admits through this one package, so a
// task created through any endpoint is seen by the same caller through
// every other.
//
// Refusals are A2A errors (a2a.ErrUnauthenticated, a2a.ErrUnauthorized) or
// wrap ErrRateLimited; errors of the bus (an API key that could not be
// checked) are returned as they are, for each endpoint's own error mapping.
package admission

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/a2atoken"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/credcache"
)

// DefaultRateLimitPerMinute is the requests a caller may make to one agent
// (and to the platform-wide endpoints together) per minute, per gateway.
const DefaultRateLimitPerMinute = 60

// Config configures admission. Zero values take the documented defaults.
type Config struct {
	// RateLimitPerMinute bounds each caller's requests to each agent
	// (callers without a credential: each client address). Default
	// DefaultRateLimitPerMinute.
	RateLimitPerMinute int
	// JWKSURL, JWTIssuer and JWTAudience admit bearer tokens of an external
	// identity provider; all three or none.
	JWKSURL     string
	JWTIssuer   string
	JWTAudience string

	// Set by the gateway.
	Client *meshapi.Client
	// JS reads the A2A keys bucket, whose view lets admitted keys be
	// remembered; nil asks the credential service about every request.
	JS jetstream.JetStream
	// IsOwner checks the owner credential, which may do anything.
	IsOwner func(token string) bool
	// Signer checks the platform-signed bearer tokens.
	Signer *a2atoken.Signer
	// AgentURL is an agent's A2A URL: platform tokens may name it, or the
	// agent's id, as their audience.
	AgentURL func(agentID string) string
	Logger   zerolog.Logger
}

// Admission authenticates callers and keeps their rate limits.
type Admission struct {
	cfg     Config
	auth    *authenticator
	limiter *limiter
}

// New returns the admission of cfg. With an identity provider configured it
// starts fetching its keys in the background; Close stops that.
func New(ctx context.Context, cfg Config) (*Admission, error) {
	if cfg.RateLimitPerMinute <= 0 {
		cfg.RateLimitPerMinute = DefaultRateLimitPerMinute
	}
	a := &Admission{
		cfg:     cfg,
		auth:    &authenticator{client: cfg.Client, isOwner: cfg.IsOwner, signer: cfg.Signer, agentURL: cfg.AgentURL, log: cfg.Logger},
		limiter: newLimiter(cfg.RateLimitPerMinute),
	}
	if cfg.JS != nil {
		keys, err := credcache.Start[struct{}, meshapi.A2AKey](ctx, cfg.JS, bus.BucketA2AKeys,
			func(key string, _ *struct{}, rev uint64) (credcache.Record, bool) {
				return credcache.Record{Rev: rev, Active: true}, bus.IsA2AKeyKey(key)
			}, cfg.Logger)
		if err != nil {
			return nil, fmt.Errorf("admission: A2A keys: %w", err)
		}
		a.auth.keys = keys
	}
	if cfg.JWKSURL != "" {
		var err error
		if a.auth.jwks, err = newJWKSVerifier(ctx, cfg.JWKSURL, cfg.JWTIssuer, cfg.JWTAudience, cfg.Logger); err != nil {
			a.Close()
			return nil, err
		}
	}
	return a, nil
}

// Close stops the view of the A2A keys and releases the identity
// provider's key cache.
func (a *Admission) Close() {
	if a.auth.keys != nil {
		a.auth.keys.Stop()
	}
	if a.auth.jwks != nil {
		a.auth.jwks.close()
	}
}

// KeyRevoked is told that this gateway just revoked an agent's API key: its
// next request is refused without waiting for the view of the keys.
func (a *Admission) KeyRevoked(ctx context.Context, agentID, keyID string) {
	if a.auth.keys != nil {
		a.auth.keys.Ended(ctx, bus.A2AKeyKey(agentID, keyID))
	}
}

// ErrRateLimited is the error of a caller over its rate limit.
var ErrRateLimited = errors.New("rate limit exceeded")

// RateLimitPerMinute is the configured limit.
func (a *Admission) RateLimitPerMinute() int { return a.cfg.RateLimitPerMinute }

// Authenticate returns the caller of a request to one agent's A2A endpoint,
// from its headers only. A request without a credential is admitted only
// by a public agent. A refusal sets WWW-Authenticate on w.
func (a *Admission) Authenticate(w http.ResponseWriter, r *http.Request, agent *mesh.Agent) (*Caller, error) {
	c, err := a.auth.authenticate(r, agent)
	if err != nil {
		if IsUnauthenticated(err) {
			Challenge(w)
		}
		return nil, err
	}
	return c, nil
}

// AllowAgent takes one request of the caller to an agent from its rate
// limit. When refused, Retry-After is set on w and the error wraps
// ErrRateLimited.
func (a *Admission) AllowAgent(w http.ResponseWriter, agentID string, c *Caller) error {
	ok, wait := a.limiter.allow(agentID + "|" + c.RateKey)
	if ok {
		return nil
	}
	retry := retryAfter(w, wait)
	return a2a.NewError(ErrRateLimited, fmt.Sprintf("rate limit of %d requests a minute exceeded; retry after %s s", a.cfg.RateLimitPerMinute, retry))
}

// Admit authenticates a request of a platform-wide endpoint and takes one
// request from the caller's rate limit (Allow). It tries the credentials in
// the order an agent's endpoint does: an API key, then a bearer token
// (owner credential, platform-signed JWT, identity-provider JWT); no
// credential is an anonymous caller. Refusals set what the answer needs in
// w's headers (WWW-Authenticate, Retry-After).
func (a *Admission) Admit(w http.ResponseWriter, r *http.Request) (*Caller, error) {
	c, err := a.auth.identify(r)
	if err != nil {
		if IsUnauthenticated(err) {
			Challenge(w)
		}
		return nil, err
	}
	if err := a.Allow(w, c); err != nil {
		return nil, err
	}
	return c, nil
}

// Allow takes one request of the caller from its rate limit at the
// platform-wide endpoints: the same limit as an agent's, counted for those
// endpoints together. When refused, Retry-After is set on w and the error
// wraps ErrRateLimited.
func (a *Admission) Allow(w http.ResponseWriter, c *Caller) error {
	ok, wait := a.limiter.allow("endpoints|" + c.RateKey)
	if ok {
		return nil
	}
	retry := retryAfter(w, wait)
	return fmt.Errorf("%w: %d requests a minute; retry after %s s", ErrRateLimited, a.cfg.RateLimitPerMinute, retry)
}

// Anonymous is the caller of a request whose credential is something else
// than the endpoints' (a partner's signed callback): counted by client
// address.
func Anonymous(r *http.Request) *Caller {
	return &Caller{ID: KindPublic, Kind: KindPublic, RateKey: "ip:" + clientAddr(r)}
}

// Challenge sets the WWW-Authenticate header of a 401 answer: the
// credentials the endpoints take.
func Challenge(w http.ResponseWriter) { w.Header().Set("WWW-Authenticate", challenge) }

// IsUnauthenticated reports whether err refuses a missing or invalid credential.
func IsUnauthenticated(err error) bool { return errors.Is(err, a2a.ErrUnauthenticated) }

// ErrorMessage is the message of an A2A error admission returned, or the
// error's text: what the partner and envelope endpoints put in their own
// error shapes.
func ErrorMessage(err error) string {
	var ae *a2a.Error
	if errors.As(err, &ae) && ae.Message != "" {
		return ae.Message
	}
	return err.Error()
}

// retryAfter sets Retry-After to d rounded up to whole seconds.
func retryAfter(w http.ResponseWriter, d time.Duration) string {
	s := strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
	w.Header().Set("Retry-After", s)
	return s
}
