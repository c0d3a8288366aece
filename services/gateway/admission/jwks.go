package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/httprc/v3"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	jwxt "github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/internal/a2atoken"
)

// jwksVerifier checks bearer tokens of an external identity provider against
// its JWKS (fetched and refreshed in the background by jwx's cache), with
// issuer and audience checks. The cache alone fetches again only after its
// minimum interval (15 minutes) when a fetch failed, and not at all for a
// key it does not hold: an identity provider back from an outage, or one
// that rotated its key, would see its tokens refused until then. So a
// request that needs the keys fetched (none held yet, or the token names a
// key the set lacks) fetches them at once, at most every jwksRefetchEvery.
type jwksVerifier struct {
	cache    *jwk.Cache
	url      string
	issuer   string
	audience string
	log      zerolog.Logger

	mu        sync.Mutex
	lastFetch time.Time
}

// jwksRefetchEvery bounds the fetches requests ask for: a flood of tokens
// naming unknown keys, or one while the provider is down, costs it one
// request a second.
const jwksRefetchEvery = time.Second

// jwksFetchTimeout bounds a fetch a request waits for.
const jwksFetchTimeout = 5 * time.Second

// errJWKSUnavailable is a token that could not be checked: the identity
// provider's keys could not be fetched. It says nothing of the token.
var errJWKSUnavailable = errors.New("the identity provider's keys could not be fetched")

func newJWKSVerifier(ctx context.Context, url, issuer, audience string, log zerolog.Logger) (*jwksVerifier, error) {
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
	return &jwksVerifier{cache: cache, url: url, issuer: issuer, audience: audience, log: log}, nil
}

// verify checks a token and returns its subject and scopes (from "scope",
// space-separated, or "scp", a list). It fails with errJWKSUnavailable
// when the keys could not be fetched.
func (v *jwksVerifier) verify(ctx context.Context, token string) (sub string, scopes []string, err error) {
	set, err := v.keys(ctx, keyIDOf(token))
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", errJWKSUnavailable, err)
	}
	tok, err := jwxt.Parse([]byte(token),
		jwxt.WithKeySet(set, jws.WithInferAlgorithmFromKey(true)),
		jwxt.WithValidate(true),
		jwxt.WithIssuer(v.issuer),
		jwxt.WithAudience(v.audience),
		jwxt.WithAcceptableSkew(a2atoken.Skew),
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

// keys returns the provider's key set, fetched again first when none is
// held or it lacks kid (when named) and no fetch was asked for within
// jwksRefetchEvery. A set held is returned even when a new fetch fails.
func (v *jwksVerifier) keys(ctx context.Context, kid string) (jwk.Set, error) {
	set, err := v.cache.Lookup(ctx, v.url)
	if err == nil && (kid == "" || hasKey(set, kid)) {
		return set, nil
	}
	if !v.mayFetch() {
		if err != nil {
			return nil, err
		}
		return set, nil
	}
	fctx, cancel := context.WithTimeout(ctx, jwksFetchTimeout)
	defer cancel()
	fresh, ferr := v.cache.Refresh(fctx, v.url)
	if ferr != nil {
		// At most once per jwksRefetchEvery, as the fetches.
		v.log.Warn().Err(ferr).Str("jwks_url", v.url).Msg("the identity provider's keys could not be fetched")
	}
	switch {
	case ferr == nil:
		return fresh, nil
	case err == nil:
		return set, nil
	}
	return nil, ferr
}

// mayFetch takes a fetch from the requests' allowance.
func (v *jwksVerifier) mayFetch() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if time.Since(v.lastFetch) < jwksRefetchEvery {
		return false
	}
	v.lastFetch = time.Now()
	return true
}

// hasKey says whether set holds the key kid.
func hasKey(set jwk.Set, kid string) bool {
	_, ok := set.LookupKeyID(kid)
	return ok
}

// keyIDOf is the key id ("kid") a compact token's header names, or "".
func keyIDOf(token string) string {
	msg, err := jws.Parse([]byte(token))
	if err != nil || len(msg.Signatures()) == 0 {
		return ""
	}
	kid, _ := msg.Signatures()[0].ProtectedHeaders().KeyID()
	return kid
}

func (v *jwksVerifier) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = v.cache.Shutdown(ctx)
}
