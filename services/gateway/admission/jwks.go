package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lestrrat-go/httprc/v3"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	jwxt "github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/a2amesh/a2amesh/internal/a2atoken"
)

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

func (v *jwksVerifier) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = v.cache.Shutdown(ctx)
}
