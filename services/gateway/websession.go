package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/jetstream"
)

// Keys of BucketWebSessions: a sign-in code and a session are each stored
// under the hash of their plain value, which exists only in the sign-in link
// and in the browser's cookie.
const (
	signInKeyPrefix  = "code."
	sessionKeyPrefix = "session."
)

// signInCode is a one-time sign-in code, as stored.
type signInCode struct {
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// webSession is a web sign-in session, as stored.
type webSession struct {
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt slides forward while the session is used, up to CreatedAt
	// plus the absolute limit.
	ExpiresAt   time.Time `json:"expires_at"`
	RefreshedAt time.Time `json:"refreshed_at"`
}

// Sign-in failures people see. Unknown and used codes share one answer, so
// a guess learns nothing about which it was.
var (
	errSignInInvalid = mesh.Errorf(mesh.CodeUnauthorized, "this sign-in link is unknown or was already used")
	errSignInExpired = mesh.Errorf(mesh.CodeUnauthorized, "this sign-in link has expired")
	errSessionEnded  = mesh.Errorf(mesh.CodeUnauthorized, "your sign-in session has ended: run `a2a-platform login` for a new sign-in link")
)

// webSessions keeps the web page's sign-in codes and sessions.
type webSessions struct {
	codes    *bus.Records[signInCode]
	sessions *bus.Records[webSession]
	idle     time.Duration
	max      time.Duration
}

func openWebSessions(ctx context.Context, js jetstream.JetStream, idle, max time.Duration) (*webSessions, error) {
	codes, err := bus.OpenRecords[signInCode](ctx, js, bus.BucketWebSessions)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	sessions, err := bus.OpenRecords[webSession](ctx, js, bus.BucketWebSessions)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	return &webSessions{codes: codes, sessions: sessions, idle: idle, max: max}, nil
}

// issueCode stores a new one-time sign-in code valid for ttl and returns it.
func (s *webSessions) issueCode(ctx context.Context, ttl time.Duration) (string, time.Time, error) {
	code := secret.NewToken(secret.PrefixSignIn)
	now := time.Now().UTC()
	rec := &signInCode{IssuedAt: now, ExpiresAt: now.Add(ttl)}
	if _, err := s.codes.Create(ctx, signInKeyPrefix+secret.Hash(code), rec); err != nil {
		return "", time.Time{}, fmt.Errorf("store sign-in code: %w", err)
	}
	return code, rec.ExpiresAt, nil
}

// redeemCode consumes a sign-in code exactly once: of any number of
// concurrent attempts, only the one whose conditional delete lands wins (as
// pairing codes are redeemed).
func (s *webSessions) redeemCode(ctx context.Context, code string) error {
	key := signInKeyPrefix + secret.Hash(code)
	rec, rev, err := s.codes.Latest(ctx, key)
	if errors.Is(err, mesh.ErrNotFound) {
		return errSignInInvalid
	}
	if err != nil {
		return fmt.Errorf("read sign-in code: %w", err)
	}
	if err := s.codes.Delete(ctx, key, rev); errors.Is(err, mesh.ErrConflict) {
		return errSignInInvalid
	} else if err != nil {
		return fmt.Errorf("consume sign-in code: %w", err)
	}
	if time.Now().After(rec.ExpiresAt) {
		return errSignInExpired
	}
	return nil
}

// start opens a new session and returns its id: the cookie's value.
func (s *webSessions) start(ctx context.Context) (string, *webSession, error) {
	id := secret.NewToken(secret.PrefixWebSession)
	now := time.Now().UTC()
	rec := &webSession{CreatedAt: now, ExpiresAt: now.Add(s.idle), RefreshedAt: now}
	s.clamp(rec)
	if _, err := s.sessions.Create(ctx, sessionKeyPrefix+secret.Hash(id), rec); err != nil {
		return "", nil, fmt.Errorf("store session: %w", err)
	}
	return id, rec, nil
}

// lookup returns the live session with this id, sliding its expiry forward
// at most once per refresh interval (a write on every request would be waste).
func (s *webSessions) lookup(ctx context.Context, id string) (*webSession, error) {
	key := sessionKeyPrefix + secret.Hash(id)
	rec, rev, err := s.sessions.Get(ctx, key)
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, errSessionEnded
	}
	if err != nil {
		return nil, fmt.Errorf("read session: %w", err)
	}
	now := time.Now()
	if !now.Before(rec.ExpiresAt) {
		_ = s.sessions.Delete(ctx, key, rev)
		return nil, errSessionEnded
	}
	if now.Sub(rec.RefreshedAt) >= s.refreshEvery() {
		next := *rec
		next.RefreshedAt, next.ExpiresAt = now.UTC(), now.UTC().Add(s.idle)
		s.clamp(&next)
		// Another request may have refreshed it meanwhile: either write will do.
		if _, err := s.sessions.Update(ctx, key, &next, rev); err == nil {
			rec = &next
		}
	}
	return rec, nil
}

// end deletes a session; an unknown one is already ended.
func (s *webSessions) end(ctx context.Context, id string) error {
	err := s.sessions.Delete(ctx, sessionKeyPrefix+secret.Hash(id), 0)
	if err != nil && !errors.Is(err, mesh.ErrNotFound) {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}

// clamp keeps a session within its absolute limit.
func (s *webSessions) clamp(rec *webSession) {
	if limit := rec.CreatedAt.Add(s.max); rec.ExpiresAt.After(limit) {
		rec.ExpiresAt = limit
	}
}

func (s *webSessions) refreshEvery() time.Duration {
	return min(time.Minute, s.idle/60)
}

// csrfToken is the anti-forgery token of a session: derived from its id, so
// nothing more is stored, and one-way, so the page (which reads it) never
// holds the id itself (the cookie is HttpOnly).
func csrfToken(sessionID string) string {
	return secret.Hash("csrf\x00" + sessionID)
}
