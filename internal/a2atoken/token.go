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

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwt"
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
	Issuer    string
	Subject   string
	Audience  []string
	IssuedAt  time.Time
	NotBefore time.Time
	ExpiresAt time.Time
	Scope     string
	// ParentTaskRunID is the delegating run.
	ParentTaskRunID string
	// DelegationChain lists the agents that delegated, the subject last.
	DelegationChain []string
}

// The private claims' names in the token.
const (
	claimScope           = "scope"
	claimParentTaskRunID = "parent_task_run_id"
	claimDelegationChain = "delegation_chain"
)

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
	// This region's copy first: a process starts while the origin region,
	// which keeps the settings, is down.
	if stored, err := bus.ReadSetting(ctx, js, bus.ConfigA2AJWTSecret); err == nil {
		return signerOf(stored)
	}
	kv, err := js.KeyValue(ctx, bus.BucketConfig)
	if err != nil {
		return nil, fmt.Errorf("a2a signer: config bucket: %w", err)
	}
	for {
		e, err := kv.Get(ctx, bus.ConfigA2AJWTSecret)
		if err == nil {
			return signerOf(e.Value())
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

// signerOf is the signer of a stored key.
func signerOf(stored []byte) (*Signer, error) {
	key, err := base64.RawStdEncoding.DecodeString(string(stored))
	if err != nil || len(key) < 32 {
		return nil, fmt.Errorf("a2a signer: the stored key is malformed")
	}
	return &Signer{key: key}, nil
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
	b := jwt.NewBuilder().
		Issuer(Issuer).
		Subject(req.Subject).
		Audience([]string{req.Audience}).
		IssuedAt(req.IssuedAt).
		NotBefore(req.IssuedAt.Add(-Skew)).
		Expiration(req.IssuedAt.Add(req.TTL))
	// Empty private claims are left out, as omitempty did.
	if scope := strings.Join(req.Scopes, " "); scope != "" {
		b = b.Claim(claimScope, scope)
	}
	if req.ParentTaskRunID != "" {
		b = b.Claim(claimParentTaskRunID, req.ParentTaskRunID)
	}
	if len(req.DelegationChain) > 0 {
		b = b.Claim(claimDelegationChain, req.DelegationChain)
	}
	tok, err := b.Build()
	if err != nil {
		return "", fmt.Errorf("a2a signer: %w", err)
	}
	// One audience is written as a string, not a one-element list: the
	// shape the tokens have always had.
	tok.Options().Enable(jwt.FlattenAudience)
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.HS256(), s.key))
	if err != nil {
		return "", fmt.Errorf("a2a signer: %w", err)
	}
	return string(signed), nil
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
	tok, err := jwt.Parse([]byte(token),
		// The key is bound to HS256: a token whose header names any other
		// algorithm ("none", RS256, HS512, ...) finds no key and is refused.
		jwt.WithKey(jwa.HS256(), s.key),
		jwt.WithIssuer(Issuer),
		jwt.WithRequiredClaim(jwt.ExpirationKey),
		jwt.WithAcceptableSkew(Skew),
		// exp and nbf are checked, iat is not: a token issued a little in
		// the future by a clock ahead of ours is still good until its nbf.
		jwt.WithResetValidators(true),
		jwt.WithValidator(jwt.IsExpirationValid()),
		jwt.WithValidator(jwt.IsNbfValid()),
		jwt.WithTypedClaim(claimScope, ""),
		jwt.WithTypedClaim(claimParentTaskRunID, ""),
		jwt.WithTypedClaim(claimDelegationChain, []string{}),
	)
	if err != nil {
		return nil, err
	}
	return claimsOf(tok)
}

// claimsOf reads a verified token's claims.
func claimsOf(tok jwt.Token) (*Claims, error) {
	var c Claims
	c.Issuer, _ = tok.Issuer()
	c.Subject, _ = tok.Subject()
	c.Audience, _ = tok.Audience()
	c.IssuedAt, _ = tok.IssuedAt()
	c.NotBefore, _ = tok.NotBefore()
	c.ExpiresAt, _ = tok.Expiration()
	for name, dst := range map[string]any{
		claimScope:           &c.Scope,
		claimParentTaskRunID: &c.ParentTaskRunID,
		claimDelegationChain: &c.DelegationChain,
	} {
		if !tok.Has(name) {
			continue
		}
		if err := tok.Get(name, dst); err != nil {
			return nil, fmt.Errorf("claim %s: %w", name, err)
		}
	}
	return &c, nil
}

// IssuerOf returns the iss claim of a JWT without checking anything, to
// choose the key that checks it.
func IssuerOf(token string) string {
	tok, err := jwt.ParseInsecure([]byte(token))
	if err != nil {
		return ""
	}
	iss, _ := tok.Issuer()
	return iss
}
