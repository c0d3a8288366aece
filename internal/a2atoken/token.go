// Package a2atoken makes and checks the bearer JWTs the platform signs for
// A2A calls it makes on an agent's behalf (HS256, issuer
// urn:a2amesh:platform): the gateway's A2A endpoint checks them, and the
// delegation service signs them when it hands a task to another agent. The
// key is generated once and kept in the config bucket, so every process
// signs and checks with the same one.
package a2atoken

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
)

// Issuer is the iss of the bearer JWTs the platform signs.
const Issuer = "urn:a2amesh:platform"

// Skew is how far a token's times may be off the checking clock.
const Skew = 30 * time.Second

// Claims are the claims of a platform-signed A2A bearer token: sub is the
// agent the platform acts for, aud the target agent (its id or its A2A URL),
// scope the space-separated A2A scopes granted. A token made for a
// delegation also names the run that delegated (the new task's parent) and
// the delegation chain down to it; only the platform can sign them, so the
// target's endpoint may trust them.
type Claims struct {
	jwt.RegisteredClaims
	Scope string `json:"scope,omitempty"`
	// ParentTaskRunID is the delegating run.
	ParentTaskRunID string `json:"parent_task_run_id,omitempty"`
	// DelegationChain lists the agents that delegated, the subject last.
	DelegationChain []string `json:"delegation_chain,omitempty"`
}

// Scopes returns the granted scopes.
func (c *Claims) Scopes() []string { return strings.Fields(c.Scope) }

// TokenRequest asks for a platform-signed token.
type TokenRequest struct {
	// Subject is the agent the platform acts for (becomes the task's
	// initiator_agent_id).
	Subject string
	// Audience is the target agent's id or its A2A URL.
	Audience string
	Scopes   []string
	// TTL is how long the token is valid. Default 5 minutes: tokens are
	// made for one call.
	TTL time.Duration
	// IssuedAt defaults to now.
	IssuedAt time.Time
	// ParentTaskRunID and DelegationChain describe a delegation (see Claims).
	ParentTaskRunID string
	DelegationChain []string
}

// Signer signs and checks the platform's A2A bearer JWTs (HS256).
type Signer struct {
	key []byte
}

// Load reads the signing key from the config bucket, creating it the first
// time; concurrent first starts agree on one key.
func Load(ctx context.Context, js jetstream.JetStream) (*Signer, error) {
	kv, err := js.KeyValue(ctx, bus.BucketConfig)
	if err != nil {
		return nil, fmt.Errorf("a2a signer: config bucket: %w", err)
	}
	for {
		e, err := kv.Get(ctx, bus.ConfigA2AJWTSecret)
		if err == nil {
			key, err := base64.RawStdEncoding.DecodeString(string(e.Value()))
			if err != nil || len(key) < 32 {
				return nil, fmt.Errorf("a2a signer: the stored key is malformed")
			}
			return &Signer{key: key}, nil
		}
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, fmt.Errorf("a2a signer: %w", err)
		}
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		if _, err := kv.Create(ctx, bus.ConfigA2AJWTSecret, []byte(base64.RawStdEncoding.EncodeToString(key))); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("a2a signer: store key: %w", err)
		}
	}
}

// Sign issues a token.
func (s *Signer) Sign(req TokenRequest) (string, error) {
	if req.Subject == "" || req.Audience == "" {
		return "", errors.New("a2a signer: subject and audience are required")
	}
	if req.TTL <= 0 {
		req.TTL = 5 * time.Minute
	}
	if req.IssuedAt.IsZero() {
		req.IssuedAt = time.Now()
	}
	claims := Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    Issuer,
			Subject:   req.Subject,
			Audience:  jwt.ClaimStrings{req.Audience},
			IssuedAt:  jwt.NewNumericDate(req.IssuedAt),
			NotBefore: jwt.NewNumericDate(req.IssuedAt.Add(-Skew)),
			ExpiresAt: jwt.NewNumericDate(req.IssuedAt.Add(req.TTL)),
		},
		Scope:           strings.Join(req.Scopes, " "),
		ParentTaskRunID: req.ParentTaskRunID,
		DelegationChain: req.DelegationChain,
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.key)
}

// Verify checks a platform token's signature, issuer and expiry, and that
// its audience names one of audiences.
func (s *Signer) Verify(token string, audiences ...string) (*Claims, error) {
	claims, err := s.VerifyAnyAudience(token)
	if err != nil {
		return nil, err
	}
	for _, aud := range claims.Audience {
		if slices.Contains(audiences, aud) {
			return claims, nil
		}
	}
	return nil, errors.New("token is for another audience")
}

// VerifyAnyAudience checks a platform token's signature, issuer and expiry;
// the caller decides what its audience lets it reach (the platform-wide
// endpoints: the agents it names).
func (s *Signer) VerifyAnyAudience(token string) (*Claims, error) {
	var claims Claims
	_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return s.key, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(Issuer),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(Skew),
	)
	if err != nil {
		return nil, err
	}
	return &claims, nil
}

// IssuerOf returns the iss claim of a JWT without checking anything, to
// choose the key that checks it.
func IssuerOf(token string) string {
	var claims jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &claims); err != nil {
		return ""
	}
	return claims.Issuer
}
