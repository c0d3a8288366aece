// Package inflight bounds the large request bodies a gateway process holds
// at once. A body costs a multiple of its size while it is read, decoded,
// stored and answered; a burst of them, within every caller's rate limit,
// would otherwise grow the process without bound. Callers without a
// credential (of public agents) have a smaller share of their own, so they
// never take the turns of callers the owner let in.
//
// The gateway's middleware gives every request a place to keep its turn
// (Track) and gives it back when the request ends; each door takes a turn
// (Take) once it knows whether its caller has a credential, before it reads
// the body, and answers a refusal in its own protocol's shape.
package inflight

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
)

// ErrBusy is a large body refused because the process holds as many as it
// takes. It wraps admission.ErrRateLimited, so every door answers it as a
// rate limit (429 with Retry-After, or its protocol's code for one).
var ErrBusy = fmt.Errorf("%w: too many large request bodies in flight; retry", admission.ErrRateLimited)

// Config configures a Limiter. Zero values take the documented defaults.
type Config struct {
	// Large is the size from which a body takes a turn; a body of unknown
	// length always does. Default mesh.LargeBodyBytes.
	Large int64
	// Credentialed is how many large bodies of callers with a credential
	// are handled at once. Default mesh.MaxLargeBodies.
	Credentialed int
	// Anonymous is how many large bodies of callers without one are
	// handled at once. Default mesh.MaxAnonymousLargeBodies.
	Anonymous int
	// Wait is how long a body waits for a turn before it is refused.
	// Default mesh.LargeBodyWait.
	Wait time.Duration
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Large < 0:
		return fmt.Errorf("inflight: Large is %d; it must not be negative", c.Large)
	case c.Credentialed < 0 || c.Anonymous < 0:
		return fmt.Errorf("inflight: Credentialed (%d) and Anonymous (%d) must not be negative", c.Credentialed, c.Anonymous)
	case c.Wait < 0:
		return fmt.Errorf("inflight: Wait is %s; it must not be negative", c.Wait)
	}
	return nil
}

func (c *Config) defaults() {
	c.Large = cmp.Or(c.Large, mesh.LargeBodyBytes)
	c.Credentialed = cmp.Or(c.Credentialed, mesh.MaxLargeBodies)
	c.Anonymous = cmp.Or(c.Anonymous, mesh.MaxAnonymousLargeBodies)
	c.Wait = cmp.Or(c.Wait, mesh.LargeBodyWait)
}

// Limiter hands out turns for large bodies.
type Limiter struct {
	cfg          Config
	credentialed chan struct{}
	anonymous    chan struct{}
}

// New returns a limiter.
func New(cfg Config) (*Limiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	return &Limiter{cfg: cfg, credentialed: make(chan struct{}, cfg.Credentialed), anonymous: make(chan struct{}, cfg.Anonymous)}, nil
}

// holder keeps the turn a request took.
type holder struct {
	l    *Limiter
	slot chan struct{}
}

type holderKey struct{}

// Track gives r a place for its turn; the returned function gives the turn
// back and must be called when the request ends. A nil limiter tracks
// nothing.
func (l *Limiter) Track(r *http.Request) (*http.Request, func()) {
	if l == nil {
		return r, func() {}
	}
	h := &holder{l: l}
	return r.WithContext(context.WithValue(r.Context(), holderKey{}, h)), func() {
		if h.slot != nil {
			<-h.slot
			h.slot = nil
		}
	}
}

// Take takes a turn for r's body when it is large, waiting for one at most
// the configured Wait; the turn is held until the request ends. A refusal
// sets Retry-After on w and is ErrBusy. A request the middleware did not
// track (a door served on its own), a small body or a second call takes
// nothing.
func Take(w http.ResponseWriter, r *http.Request, anonymous bool) error {
	h, _ := r.Context().Value(holderKey{}).(*holder)
	if h == nil || h.slot != nil || (r.ContentLength >= 0 && r.ContentLength < h.l.cfg.Large) {
		return nil
	}
	slot := h.l.credentialed
	if anonymous {
		slot = h.l.anonymous
	}
	select {
	case slot <- struct{}{}:
		h.slot = slot
		return nil
	default:
	}
	wait := time.NewTimer(h.l.cfg.Wait)
	defer wait.Stop()
	select {
	case slot <- struct{}{}:
		h.slot = slot
		return nil
	case <-wait.C:
	case <-r.Context().Done():
	}
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(h.l.cfg.Wait/time.Second))))
	return ErrBusy
}

// Anonymous reports whether r carries no credential in its headers: an API
// key, a bearer token, a runtime token or a session cookie. A door that
// knows its caller better says so itself.
func Anonymous(r *http.Request) bool {
	for _, h := range []string{"Authorization", "X-Api-Key", "X-Runtime-Token", "Cookie"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	return true
}
