package admission

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
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
// request that needs the keys fetched (none held yet, or its token, refused,
// names a key the set lacks) fetches them at once, at most every
// jwksRefetchEvery.
type jwksVerifier struct {
	cache *jwk.Cache
	url   string
	// shown is url as logs may show it: without a password it may carry.
	shown    string
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
	shown := url
	if u, err := neturl.Parse(url); err == nil {
		shown = u.Redacted()
	}
	// Not waiting for the first fetch: an identity provider that is down
	// at start-up must not keep the platform from starting.
	if err := cache.Register(ctx, url, jwk.WithWaitReady(false)); err != nil {
		return nil, fmt.Errorf("a2a: jwks %s: %w", shown, err)
	}
	return &jwksVerifier{cache: cache, url: url, shown: shown, issuer: issuer, audience: audience, log: log}, nil
}

// verify checks a token and returns its subject and scopes (from "scope",
// space-separated, or "scp", a list). It fails with errJWKSUnavailable
// when no keys are held and they could not be fetched.
func (v *jwksVerifier) verify(ctx context.Context, token string) (sub string, scopes []string, err error) {
	set, err := v.cache.Lookup(ctx, v.url)
	if err != nil {
		// None held: the provider has not answered yet.
		if set, err = v.fetch(ctx); err != nil {
			return "", nil, fmt.Errorf("%w: %w", errJWKSUnavailable, err)
		}
	}
	tok, err := v.parse(set, token)
	if err != nil && rotated(set, token) {
		if fresh, ferr := v.fetch(ctx); ferr == nil {
			tok, err = v.parse(fresh, token)
		}
	}
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

// parse checks token's signature against set, and its issuer, audience
// and times.
func (v *jwksVerifier) parse(set jwk.Set, token string) (jwxt.Token, error) {
	return jwxt.Parse([]byte(token),
		jwxt.WithKeySet(set, jws.WithInferAlgorithmFromKey(true)),
		jwxt.WithValidate(true),
		jwxt.WithIssuer(v.issuer),
		jwxt.WithAudience(v.audience),
		jwxt.WithAcceptableSkew(a2atoken.Skew),
	)
}

// fetch fetches the key set now, unless a fetch was asked for within
// jwksRefetchEvery.
func (v *jwksVerifier) fetch(ctx context.Context) (jwk.Set, error) {
	if !v.mayFetch() {
		return nil, errFetchedLately
	}
	ctx, cancel := context.WithTimeout(ctx, jwksFetchTimeout)
	defer cancel()
	set, err := v.cache.Refresh(ctx, v.url)
	if err != nil {
		// The fetch's error names the URL: shown without its password.
		err = errors.New(strings.ReplaceAll(err.Error(), v.url, v.shown))
		// At most once per jwksRefetchEvery, as the fetches.
		v.log.Warn().Err(err).Str("jwks_url", v.shown).Msg("the identity provider's keys could not be fetched")
	}
	return set, err
}

// errFetchedLately is a fetch not made: one was asked for less than
// jwksRefetchEvery ago.
var errFetchedLately = errors.New("the keys were asked for less than a second ago")

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

// rotated says whether a refused token names a key set lacks: the
// provider may have rotated to it since set was fetched.
func rotated(set jwk.Set, token string) bool {
	msg, err := jws.Parse([]byte(token))
	if err != nil || len(msg.Signatures()) == 0 {
		return false
	}
	kid, ok := msg.Signatures()[0].ProtectedHeaders().KeyID()
	if !ok || kid == "" {
		return false
	}
	_, held := set.LookupKeyID(kid)
	return !held
}

func (v *jwksVerifier) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = v.cache.Shutdown(ctx)
}
