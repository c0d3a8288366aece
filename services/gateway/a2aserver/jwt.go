package a2aserver

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
	"github.com/lestrrat-go/httprc/v3"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	jwxt "github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
)

// PlatformIssuer is the iss of the bearer JWTs the platform signs.
const PlatformIssuer = "urn:a2amesh:platform"

// jwtSkew is how far a token's times may be off the platform's clock.
const jwtSkew = 30 * time.Second

// Claims are the claims of a platform-signed A2A bearer token: sub is the
// agent the platform acts for, aud the target agent (its id or its A2A URL),
// scope the space-separated A2A scopes granted.
type Claims struct {
	jwt.RegisteredClaims
	Scope string `json:"scope,omitempty"`
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
}

// Signer signs and checks the platform's A2A bearer JWTs (HS256). The next
// front doors use it when the platform calls an agent on another agent's
// behalf. The key is generated once and kept in the config bucket, so every
// gateway instance signs and checks with the same one.
type Signer struct {
	key []byte
}

// LoadSigner reads the signing key from the config bucket, creating it the
// first time; concurrent first starts agree on one key.
func LoadSigner(ctx context.Context, js jetstream.JetStream) (*Signer, error) {
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
			Issuer:    PlatformIssuer,
			Subject:   req.Subject,
			Audience:  jwt.ClaimStrings{req.Audience},
			IssuedAt:  jwt.NewNumericDate(req.IssuedAt),
			NotBefore: jwt.NewNumericDate(req.IssuedAt.Add(-jwtSkew)),
			ExpiresAt: jwt.NewNumericDate(req.IssuedAt.Add(req.TTL)),
		},
		Scope: strings.Join(req.Scopes, " "),
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.key)
}

// Verify checks a platform token's signature, issuer and expiry, and that
// its audience names one of audiences.
func (s *Signer) Verify(token string, audiences ...string) (*Claims, error) {
	var claims Claims
	_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return s.key, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(PlatformIssuer),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(jwtSkew),
	)
	if err != nil {
		return nil, err
	}
	for _, aud := range claims.Audience {
		if slices.Contains(audiences, aud) {
			return &claims, nil
		}
	}
	return nil, errors.New("token is for another audience")
}

// tokenIssuer returns the iss claim of a JWT without checking anything, to
// choose the key that checks it.
func tokenIssuer(token string) string {
	var claims jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &claims); err != nil {
		return ""
	}
	return claims.Issuer
}

// jwksVerifier checks bearer tokens of an external identity provider against
// its JWKS (fetched and refreshed in the background by jwx's cache), with
// issuer and audience checks.
type jwksVerifier struct {
	cache    *jwk.Cache
	url      string
	issuer   string
	audience string
}

func newJWKSVerifier(ctx context.Context, url, issuer, audience string) (*jwksVerifier, error) {
	if issuer == "" || audience == "" {
		return nil, errors.New("a2a: an external JWKS needs the issuer and the audience its tokens must carry")
	}
	cache, err := jwk.NewCache(context.WithoutCancel(ctx), httprc.NewClient())
	if err != nil {
		return nil, fmt.Errorf("a2a: jwks cache: %w", err)
	}
	// Not waiting for the first fetch: an identity provider that is down
	// at start-up must not keep the platform from starting.
	if err := cache.Register(ctx, url, jwk.WithWaitReady(false)); err != nil {
		return nil, fmt.Errorf("a2a: jwks %s: %w", url, err)
	}
	return &jwksVerifier{cache: cache, url: url, issuer: issuer, audience: audience}, nil
}

// verify checks a token and returns its subject and scopes (from "scope",
// space-separated, or "scp", a list).
func (v *jwksVerifier) verify(ctx context.Context, token string) (sub string, scopes []string, err error) {
	set, err := v.cache.Lookup(ctx, v.url)
	if err != nil {
		return "", nil, fmt.Errorf("jwks unavailable: %w", err)
	}
	tok, err := jwxt.Parse([]byte(token),
		jwxt.WithKeySet(set, jws.WithInferAlgorithmFromKey(true)),
		jwxt.WithValidate(true),
		jwxt.WithIssuer(v.issuer),
		jwxt.WithAudience(v.audience),
		jwxt.WithAcceptableSkew(jwtSkew),
	)
	if err != nil {
		return "", nil, err
	}
	sub, _ = tok.Subject()
	if sub == "" {
		return "", nil, errors.New("token has no subject")
	}
	var scope string
	if tok.Get("scope", &scope) == nil {
		scopes = strings.Fields(scope)
	} else {
		var scp []string
		if tok.Get("scp", &scp) == nil {
			scopes = scp
		}
	}
	return sub, scopes, nil
}

func (v *jwksVerifier) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = v.cache.Shutdown(ctx)
}
