package admission

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/a2atoken"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/credcache"
)

// HeaderAPIKey carries a per-agent A2A API key (Authorization: Bearer works too).
const HeaderAPIKey = "X-API-Key"

// authenticator decides who calls an agent's A2A endpoint. As seed 003 orders
// it, an API key is tried first (X-API-Key, or a bearer token that is an
// API key), then the bearer token: the owner credential, a JWT the platform
// signed, or a JWT of the configured identity provider. A request without a
// credential is admitted only by a public agent.
type authenticator struct {
	client *meshapi.Client
	// keys remembers the API keys the credential service admitted, while
	// their records are unchanged; nil asks every time.
	keys *credcache.Memory[struct{}, meshapi.A2AKey]
	// isOwner checks the owner credential.
	isOwner func(token string) bool
	signer  *a2atoken.Signer
	// jwks checks external tokens; nil when no identity provider is set.
	jwks *jwksVerifier
	// agentURL is an agent's A2A URL: platform tokens may name it, or the
	// agent's id, as their audience.
	agentURL func(agentID string) string
	log      zerolog.Logger
}

// Authentication failures. Their messages say what to send, never what was
// sent.
var (
	errNoCredential = a2a.NewError(a2a.ErrUnauthenticated, "this agent needs a credential: send X-API-Key: <api key> or Authorization: Bearer <token>")
	errBadKey       = a2a.NewError(a2a.ErrUnauthenticated, "invalid or revoked API key")
	errBadToken     = a2a.NewError(a2a.ErrUnauthenticated, "invalid, expired or untrusted bearer token, or one for another audience")
	errOtherAgent   = a2a.NewError(a2a.ErrUnauthorized, "this API key is for another agent")
)

// authenticate returns the caller of r for agent, or an A2A
// Unauthenticated / Unauthorized error.
func (a *authenticator) authenticate(r *http.Request, agent *mesh.Agent) (*Caller, error) {
	key := strings.TrimSpace(r.Header.Get(HeaderAPIKey))
	token := bearerToken(r)
	if key == "" && strings.HasPrefix(token, secret.PrefixAPIKey) {
		key, token = token, ""
	}
	switch {
	case key != "":
		return a.apiKey(r.Context(), key, agent)
	case token != "":
		return a.bearer(r.Context(), token, agent)
	case agent.Public:
		// Anyone may send and read: each client address has its own rate
		// limit, and every anonymous caller is one caller, so tasks are only
		// found again by their (unguessable) ids.
		return &Caller{ID: KindPublic, Kind: KindPublic, Scopes: []string{meshapi.ScopeSend, meshapi.ScopeRead},
			RateKey: "ip:" + clientAddr(r)}, nil
	}
	return nil, errNoCredential
}

// key resolves an API key to the key it is, remembered or asked of the
// credential service.
func (a *authenticator) key(ctx context.Context, key string) (*meshapi.A2AKey, error) {
	hash := secret.Hash(key)
	if a.keys != nil {
		if k, ok := a.keys.Get(hash); ok {
			return &k, nil
		}
	}
	k, err := a.client.AuthenticateA2AKey(ctx, hash)
	if errors.Is(err, mesh.ErrUnauthorized) {
		return nil, errBadKey
	}
	if err != nil {
		return nil, err
	}
	if a.keys != nil {
		a.keys.Put(ctx, hash, bus.A2AKeyKey(k.AgentID, k.KeyID), k.Revision, k.A2AKey)
	}
	return &k.A2AKey, nil
}

func (a *authenticator) apiKey(ctx context.Context, key string, agent *mesh.Agent) (*Caller, error) {
	k, err := a.key(ctx, key)
	if err != nil {
		return nil, err
	}
	if k.AgentID != agent.ID {
		return nil, errOtherAgent
	}
	id := "key:" + k.KeyID
	return &Caller{ID: id, Kind: KindAPIKey, Scopes: k.Scopes, RateKey: id, KeyAgentID: k.AgentID}, nil
}

func (a *authenticator) bearer(ctx context.Context, token string, agent *mesh.Agent) (*Caller, error) {
	if strings.HasPrefix(token, secret.PrefixOwner) {
		if a.isOwner != nil && a.isOwner(token) {
			return ownerCaller(), nil
		}
		return nil, errBadToken
	}
	if strings.Count(token, ".") != 2 {
		return nil, errBadToken
	}
	if a2atoken.IssuerOf(token) == a2atoken.Issuer {
		claims, err := a.signer.Verify(token, agent.ID, a.agentURL(agent.ID))
		if err != nil || !mesh.ValidID(claims.Subject) {
			return nil, errBadToken
		}
		return platformCaller(claims), nil
	}
	if a.jwks == nil {
		return nil, errBadToken
	}
	return a.external(ctx, token)
}

// external is the caller of an identity provider's token. A token that
// could not be checked, the provider's keys out of reach, is not refused
// as a bad credential: the caller is told to try again (UNAVAILABLE).
func (a *authenticator) external(ctx context.Context, token string) (*Caller, error) {
	sub, scopes, err := a.jwks.verify(ctx, token)
	if errors.Is(err, errJWKSUnavailable) {
		a.log.Debug().Ctx(ctx).Err(err).Msg("an identity provider's token could not be checked")
		return nil, mesh.Errorf(mesh.CodeUnavailable, "the identity provider's keys could not be fetched to check the token; try again")
	}
	if err != nil {
		a.log.Debug().Ctx(ctx).Err(err).Msg("external bearer token refused")
		return nil, errBadToken
	}
	id := "jwt:" + a.jwks.issuer + "|" + sub
	return &Caller{ID: id, Kind: KindExternalJWT, Scopes: scopes, RateKey: id}, nil
}

// platformCaller is the caller of a platform-signed token.
func platformCaller(claims *a2atoken.Claims) *Caller {
	id := "agent:" + claims.Subject
	return &Caller{
		ID: id, Kind: KindPlatformJWT, AgentID: claims.Subject, Scopes: claims.Scopes(), RateKey: id,
		Audience: claims.Audience, ParentTaskRunID: claims.ParentTaskRunID, DelegationChain: claims.DelegationChain,
	}
}

// identify returns the caller of r for the platform-wide endpoints, which serve
// no one agent: credentials are checked the same way, in the same order,
// and what each reaches is decided per agent (Caller.Reaches). A request
// without a credential is an anonymous caller, who reaches public agents.
func (a *authenticator) identify(r *http.Request) (*Caller, error) {
	key := strings.TrimSpace(r.Header.Get(HeaderAPIKey))
	token := bearerToken(r)
	if key == "" && strings.HasPrefix(token, secret.PrefixAPIKey) {
		key, token = token, ""
	}
	switch {
	case key != "":
		k, err := a.key(r.Context(), key)
		if err != nil {
			return nil, err
		}
		id := "key:" + k.KeyID
		return &Caller{ID: id, Kind: KindAPIKey, Scopes: k.Scopes, RateKey: id, KeyAgentID: k.AgentID}, nil
	case token == "":
		return &Caller{ID: KindPublic, Kind: KindPublic, RateKey: "ip:" + clientAddr(r)}, nil
	case strings.HasPrefix(token, secret.PrefixOwner):
		if a.isOwner != nil && a.isOwner(token) {
			return ownerCaller(), nil
		}
		return nil, errBadToken
	case strings.Count(token, ".") != 2:
		return nil, errBadToken
	case a2atoken.IssuerOf(token) == a2atoken.Issuer:
		claims, err := a.signer.VerifyAnyAudience(token)
		if err != nil || !mesh.ValidID(claims.Subject) {
			return nil, errBadToken
		}
		return platformCaller(claims), nil
	case a.jwks == nil:
		return nil, errBadToken
	}
	return a.external(r.Context(), token)
}

// bearerToken returns the token of Authorization: Bearer, or "".
func bearerToken(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// clientAddr is the address the request came from. Forwarding headers are
// not trusted: they are the client's to choose.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// challenge is the WWW-Authenticate value of 401 answers: the schemes the
// agent card declares.
const challenge = `Bearer realm="a2a", ApiKey realm="a2a" header="X-API-Key"`
