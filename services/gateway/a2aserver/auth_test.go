package a2aserver_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	jwxt "github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/a2amesh/a2amesh/internal/a2atoken"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/a2aserver"
)

// idp is an external identity provider: an RSA key whose public half a
// JWKS endpoint (a loopback httptest server) serves. While down, the
// endpoint answers 503; rotate replaces the key.
type idp struct {
	srv  *httptest.Server
	key  jwk.Key
	jwks atomic.Pointer[[]byte]
	down atomic.Bool
}

func newIDP(t *testing.T) *idp {
	t.Helper()
	i := &idp{}
	i.rotate(t, "test-key")
	i.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if i.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*i.jwks.Load())
	}))
	t.Cleanup(i.srv.Close)
	return i
}

// rotate makes a new key, kid, the one the provider signs with and the
// only one its JWKS serves.
func (i *idp) rotate(t *testing.T, kid string) {
	t.Helper()
	raw, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	key, err := jwk.Import(raw)
	if err != nil {
		t.Fatal(err)
	}
	_ = key.Set(jwk.KeyIDKey, kid)
	_ = key.Set(jwk.AlgorithmKey, jwa.RS256())
	pub, err := key.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	body, _ := json.Marshal(set)
	i.key = key
	i.jwks.Store(&body)
}

func (i *idp) token(t *testing.T, iss, aud, sub, scope string, exp time.Time) string {
	t.Helper()
	tok, err := jwxt.NewBuilder().Issuer(iss).Audience([]string{aud}).Subject(sub).IssuedAt(time.Now().Add(-time.Minute)).
		Expiration(exp).Claim("scope", scope).Build()
	if err != nil {
		t.Fatal(err)
	}
	signed, err := jwxt.Sign(tok, jwxt.WithKey(jwa.RS256(), i.key))
	if err != nil {
		t.Fatal(err)
	}
	return string(signed)
}

// TestAuth_WhoMayCall: the card is public; every method needs a credential
// (an API key of this agent, a platform JWT for it, a JWT of the trusted
// identity provider, or the owner credential) with the method's scope.
// API keys are tried first, then bearer tokens.
func TestAuth_WhoMayCall(t *testing.T) {
	t.Parallel()
	provider := newIDP(t)
	d := startEndpoint(t, endpointOptions{platform: func(c *platform.Config) {
		c.A2AJWKSURL = provider.srv.URL
		c.A2AJWTIssuer = "https://idp.test"
		c.A2AJWTAudience = "a2a-mesh"
	}})
	agentID := d.agent.Agent.ID
	other := meshtest.StartOnlineAgent(t, d.p, meshtest.AgentOptions{Name: "another agent"})
	otherKey := d.newKeyFor(other.Agent.ID, nil).APIKey
	readOnly := d.newKey([]string{meshapi.ScopeRead})
	revoked := d.newKeyFor(agentID, nil)
	d.p.Do(http.MethodDelete, "/a2a/"+agentID+"/api-keys/"+revoked.KeyID, nil, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	signer, err := a2atoken.Load(ctx, d.p.Conn().JS)
	if err != nil {
		t.Fatal(err)
	}
	platformToken := func(aud string, scopes []string, issued time.Time) string {
		tok, err := signer.Sign(a2atoken.TokenRequest{Subject: other.Agent.ID, Audience: aud, Scopes: scopes, TTL: time.Minute, IssuedAt: issued})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	all := meshapi.A2AScopes()
	send := func(header map[string]string) *answer {
		h := map[string]string{"A2A-Version": "1.0"}
		for k, v := range header {
			h[k] = v
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{
			"message": map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": "auth"}}}}})
		return d.do(raw{method: http.MethodPost, path: "/a2a/" + agentID, header: h, body: string(b)})
	}
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	for _, c := range []struct {
		name   string
		header map[string]string
		status int
		code   int // JSON-RPC error code, 0 for success
	}{
		{"no credential", nil, 401, -31401},
		{"API key", map[string]string{"X-API-Key": d.key}, 200, 0},
		{"API key as bearer", bearer(d.key), 200, 0},
		{"another agent's key", map[string]string{"X-API-Key": otherKey}, 200, -31403},
		{"revoked key", map[string]string{"X-API-Key": revoked.APIKey}, 401, -31401},
		{"unknown key", map[string]string{"X-API-Key": "a2akey_" + strings.Repeat("x", 43)}, 401, -31401},
		{"key without the send scope", map[string]string{"X-API-Key": readOnly}, 200, -31403},
		{"API key first: a good key wins over a bad bearer", map[string]string{"X-API-Key": d.key, "Authorization": "Bearer nonsense"}, 200, 0},
		{"owner credential", bearer(d.p.OwnerToken), 200, 0},
		{"platform JWT for the agent's id", bearer(platformToken(agentID, all, time.Now())), 200, 0},
		{"platform JWT for the agent's URL", bearer(platformToken(d.url, all, time.Now())), 200, 0},
		{"platform JWT for another agent", bearer(platformToken(other.Agent.ID, all, time.Now())), 401, -31401},
		{"expired platform JWT", bearer(platformToken(agentID, all, time.Now().Add(-time.Hour))), 401, -31401},
		{"platform JWT without the scope", bearer(platformToken(agentID, []string{meshapi.ScopeRead}, time.Now())), 200, -31403},
		{"identity provider JWT", bearer(provider.token(t, "https://idp.test", "a2a-mesh", "alice", "a2a:send a2a:read", time.Now().Add(time.Hour))), 200, 0},
		{"identity provider JWT, wrong audience", bearer(provider.token(t, "https://idp.test", "someone-else", "alice", "a2a:send", time.Now().Add(time.Hour))), 401, -31401},
		{"identity provider JWT, wrong issuer", bearer(provider.token(t, "https://evil.test", "a2a-mesh", "alice", "a2a:send", time.Now().Add(time.Hour))), 401, -31401},
		{"identity provider JWT, expired", bearer(provider.token(t, "https://idp.test", "a2a-mesh", "alice", "a2a:send", time.Now().Add(-time.Minute))), 401, -31401},
		{"identity provider JWT without the scope", bearer(provider.token(t, "https://idp.test", "a2a-mesh", "alice", "a2a:read", time.Now().Add(time.Hour))), 200, -31403},
		{"malformed bearer", bearer("not-a-token"), 401, -31401},
	} {
		a := send(c.header)
		if a.status != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, a.status, c.status, a.body)
			continue
		}
		body := a.json(t)
		switch {
		case c.code == 0 && body["result"] == nil:
			t.Errorf("%s: refused: %s", c.name, a.body)
		case c.code != 0:
			checkRPCError(t, c.name, "1.0", a, c.code, map[int]string{-31401: "UNAUTHENTICATED", -31403: "UNAUTHORIZED"}[c.code])
		}
		if c.status == 401 && !strings.Contains(a.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: no WWW-Authenticate challenge", c.name)
		}
	}

	// The card is public; REST answers 401 and 403 with its status shape.
	if a := d.do(raw{method: http.MethodGet, path: "/a2a/" + agentID + "/.well-known/agent-card.json"}); a.status != 200 {
		t.Errorf("card without credential: %d", a.status)
	}
	rest := func(key string) int {
		return d.do(raw{method: http.MethodGet, path: "/a2a/" + agentID + "/tasks", header: map[string]string{"A2A-Version": "1.0", "X-API-Key": key}}).status
	}
	if s := rest(""); s != 401 {
		t.Errorf("REST without credential: %d", s)
	}
	if s := rest(otherKey); s != 403 {
		t.Errorf("REST with another agent's key: %d", s)
	}
	if s := rest(readOnly); s != 200 {
		t.Errorf("REST list with a read key: %d", s)
	}

	// API keys are managed with the owner credential only, and listed by
	// prefix, never whole.
	if a := d.do(raw{method: http.MethodGet, path: "/a2a/" + agentID + "/api-keys", header: map[string]string{"Authorization": "Bearer " + d.key}}); a.status != 401 {
		t.Errorf("listing keys with an API key: %d", a.status)
	}
	var keys meshapi.A2AKeyList
	d.p.Do(http.MethodGet, "/a2a/"+agentID+"/api-keys", nil, &keys)
	if len(keys.Keys) != 2 {
		t.Errorf("%d keys listed, want 2 (the revoked one is gone)", len(keys.Keys))
	}
	for _, k := range keys.Keys {
		if !strings.HasPrefix(d.key, k.Prefix) && !strings.HasPrefix(readOnly, k.Prefix) {
			t.Errorf("listed prefix %q is no key's", k.Prefix)
		}
	}
	if strings.Contains(meshtest.JSON(keys), d.key) {
		t.Error("a listed key shows the whole key")
	}
	var bad meshtest.ErrorBody
	if resp := d.p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/" + agentID + "/api-keys", Owner: true, JSON: map[string]any{"scopes": []string{"a2a:everything"}}}); resp.Status != 400 {
		t.Errorf("a key with an unknown scope: %d", resp.Status)
	} else {
		resp.Decode(t, &bad)
	}
}

// TestAuth_PublicAgent: an agent marked public takes messages without a
// credential (rate-limited per client address), and only its creator's
// credential lists tasks.
func TestAuth_PublicAgent(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{})
	agentID := d.agent.Agent.ID
	publicAgent(t, d, agentID)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": map[string]any{
		"message": map[string]any{"messageId": mesh.NewID(), "role": "user", "kind": "message", "parts": []any{map[string]any{"kind": "text", "text": "anyone"}}}}})
	a := d.do(raw{method: http.MethodPost, path: "/a2a/" + agentID, body: string(b)})
	res, _ := a.json(t)["result"].(map[string]any)
	if a.status != 200 || res == nil || res["status"].(map[string]any)["state"] != "completed" {
		t.Fatalf("anonymous send to a public agent: %d %s", a.status, a.body)
	}
	// Anonymous callers read what they know the id of, but list nothing.
	get, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": map[string]any{"id": res["id"]}})
	if g := d.do(raw{method: http.MethodPost, path: "/a2a/" + agentID, body: string(get)}).json(t); g["result"] == nil {
		t.Errorf("anonymous get of its task: %v", g)
	}
	l := d.do(raw{method: http.MethodGet, path: "/a2a/" + agentID + "/tasks", header: map[string]string{"A2A-Version": "1.0"}}).json(t)
	if tasks, _ := l["tasks"].([]any); len(tasks) != 0 {
		t.Errorf("an anonymous caller listed %d tasks", len(tasks))
	}
	// Push configurations are not for anonymous callers: they are told to
	// authenticate.
	pushB, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tasks/pushNotificationConfig/set", "params": map[string]any{
		"taskId": res["id"], "pushNotificationConfig": map[string]any{"url": "https://example.com/hook"}}})
	checkRPCError(t, "anonymous push config", "0.3", d.do(raw{method: http.MethodPost, path: "/a2a/" + agentID, body: string(pushB)}), -31401, "UNAUTHENTICATED")
}

// extendedCardDoor is one way to ask for the extended agent card.
type extendedCardDoor struct {
	name    string
	version string // the JSON-RPC version, "" for HTTP+JSON
	call    func(d *endpoint, agentID string, header map[string]string) *answer
}

var extendedCardDoors = []extendedCardDoor{
	{"0.3 agent/getAuthenticatedExtendedCard", "0.3", func(d *endpoint, agentID string, h map[string]string) *answer {
		return d.do(raw{method: http.MethodPost, path: "/a2a/" + agentID, header: h,
			body: `{"jsonrpc":"2.0","id":"card-03","method":"agent/getAuthenticatedExtendedCard"}`})
	}},
	{"1.0 GetExtendedAgentCard", "1.0", func(d *endpoint, agentID string, h map[string]string) *answer {
		return d.do(raw{method: http.MethodPost, path: "/a2a/" + agentID, header: withHeader(h, "A2A-Version", "1.0"),
			body: `{"jsonrpc":"2.0","id":"card-10","method":"GetExtendedAgentCard","params":{}}`})
	}},
	{"GET /extendedAgentCard", "", func(d *endpoint, agentID string, h map[string]string) *answer {
		return d.do(raw{method: http.MethodGet, path: "/a2a/" + agentID + "/extendedAgentCard", header: withHeader(h, "A2A-Version", "1.0")})
	}},
	{"GET /v1/card", "", func(d *endpoint, agentID string, h map[string]string) *answer {
		return d.do(raw{method: http.MethodGet, path: "/a2a/" + agentID + "/v1/card", header: h})
	}},
}

func withHeader(h map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for hk, hv := range h {
		out[hk] = hv
	}
	return out
}

// checkRESTError asserts an HTTP+JSON error: the status, and the AIP-193
// body with its code, status name and ErrorInfo reason.
func checkRESTError(t *testing.T, name string, a *answer, status int, grpc, reason string) {
	t.Helper()
	if a.status != status {
		t.Errorf("%s: status %d, want %d: %s", name, a.status, status, a.body)
		return
	}
	var body struct {
		Error struct {
			Code    int              `json:"code"`
			Status  string           `json:"status"`
			Message string           `json:"message"`
			Details []map[string]any `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(a.body, &body); err != nil || body.Error.Code != status || body.Error.Status != grpc || body.Error.Message == "" ||
		len(body.Error.Details) == 0 || body.Error.Details[0]["reason"] != reason {
		t.Errorf("%s: body %s, want code %d, status %s, reason %s", name, a.body, status, grpc, reason)
	}
}

// publicAgent makes an agent public and waits until its card lets callers
// without a credential in.
func publicAgent(t *testing.T, d *endpoint, agentID string) {
	t.Helper()
	d.p.Do(http.MethodPatch, "/agent-accounts/"+agentID, map[string]any{"public": true}, nil)
	meshtest.Eventually(t, 10*time.Second, func() bool {
		card := d.do(raw{method: http.MethodGet, path: "/a2a/" + agentID + "/agent-card"}).json(t)
		return len(asList(card["securityRequirements"])) == 0 || anonymousAlternative(card)
	}, func() string { return "the card still asks every caller for a credential" })
}

// anonymousAlternative reports whether a card's security requirements
// include the empty requirement, which lets a caller without a credential
// in, in both forms of the card (0.3 security, 1.0 securityRequirements).
func anonymousAlternative(card map[string]any) bool {
	v03, v10 := false, false
	for _, r := range asList(card["security"]) {
		if m, ok := r.(map[string]any); ok && len(m) == 0 {
			v03 = true
		}
	}
	for _, r := range asList(card["securityRequirements"]) {
		if m, ok := r.(map[string]any); ok {
			if s, ok := m["schemes"].(map[string]any); len(m) == 0 || (ok && len(s) == 0) {
				v10 = true
			}
		}
	}
	return v03 && v10
}

func asList(v any) []any { l, _ := v.([]any); return l }

// TestAuth_ExtendedCardNeedsACredentialOnEveryDoor: the extended card (with
// the runtime's id, host label and last heartbeat) is for callers with a
// credential only, on a public agent as on a private one (spec 1.0 §13.3),
// through each of its four doors: without one the answer is the door's
// authentication error (HTTP 401 with a challenge; JSON-RPC -31401 with the
// request's id, HTTP+JSON the UNAUTHENTICATED status), with an API key or a
// platform JWT for the agent it is the card.
func TestAuth_ExtendedCardNeedsACredentialOnEveryDoor(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{})
	public := meshtest.StartOnlineAgent(t, d.p, meshtest.AgentOptions{Name: "public agent"}).Agent.ID
	publicAgent(t, d, public)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	signer, err := a2atoken.Load(ctx, d.p.Conn().JS)
	if err != nil {
		t.Fatal(err)
	}
	jwt := func(agentID string) string {
		tok, err := signer.Sign(a2atoken.TokenRequest{Subject: d.agent.Agent.ID, Audience: agentID, Scopes: meshapi.A2AScopes(), TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for _, agent := range []struct{ kind, id, key string }{
		{"private", d.agent.Agent.ID, d.key},
		{"public", public, d.newKeyFor(public, nil).APIKey},
	} {
		for _, door := range extendedCardDoors {
			name := agent.kind + " agent, " + door.name
			a := door.call(d, agent.id, nil)
			if a.status != http.StatusUnauthorized || !strings.Contains(a.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s without a credential: %d %q %s, want 401 with a challenge", name, a.status, a.header.Get("WWW-Authenticate"), a.body)
				continue
			}
			if strings.Contains(string(a.body), a2aserver.PresenceExtension) {
				t.Errorf("%s without a credential: the answer holds the presence: %s", name, a.body)
			}
			if door.version == "" {
				checkRESTError(t, name+" without a credential", a, http.StatusUnauthorized, "UNAUTHENTICATED", "UNAUTHENTICATED")
			} else {
				checkRPCError(t, name+" without a credential", door.version, a, -31401, "UNAUTHENTICATED")
				if id := a.json(t)["id"]; id != "card-"+strings.ReplaceAll(door.version, ".", "") {
					t.Errorf("%s without a credential: id %v, want the request's", name, id)
				}
			}
			for cred, header := range map[string]map[string]string{
				"an API key":     {"X-API-Key": agent.key},
				"a platform JWT": {"Authorization": "Bearer " + jwt(agent.id)},
			} {
				a := door.call(d, agent.id, header)
				card := a.json(t)
				if door.version != "" {
					card, _ = card["result"].(map[string]any)
				}
				if a.status != http.StatusOK || card == nil || !strings.Contains(meshtest.JSON(card), `"host_label":"Custom Agent"`) {
					t.Errorf("%s with %s: %d %s, want the card with the runtime's presence", name, cred, a.status, a.body)
				}
			}
		}
	}
}

// TestAuth_RefusalEchoesTheRequestID: a JSON-RPC request refused for its
// credential before its body is read is answered with its id all the same
// when the id is among the body's first bytes, in both versions, so a client
// matches the answer to its request.
func TestAuth_RefusalEchoesTheRequestID(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{})
	for _, c := range []struct {
		name    string
		version string
		header  map[string]string
		body    string
		id      any
	}{
		{"no credential, 1.0, string id", "1.0", nil, `{"jsonrpc":"2.0","id":"req-1","method":"GetTask","params":{"id":"x"}}`, "req-1"},
		{"no credential, 0.3, number id", "", nil, `{"jsonrpc":"2.0","id":42,"method":"tasks/get","params":{"id":"x"}}`, float64(42)},
		{"no credential, id after the params", "1.0", nil, `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"},"id":"late"}`, "late"},
		{"unknown key", "1.0", map[string]string{"X-API-Key": "a2akey_" + strings.Repeat("x", 43)}, `{"jsonrpc":"2.0","id":"req-2","method":"GetTask","params":{"id":"x"}}`, "req-2"},
		{"no id", "1.0", nil, `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"}}`, nil},
		{"id beyond the bytes read", "1.0", nil, `{"jsonrpc":"2.0","method":"SendMessage","params":{"text":"` + strings.Repeat("x", 64<<10) + `"},"id":"far"}`, nil},
	} {
		h := map[string]string{}
		if c.version != "" {
			h["A2A-Version"] = c.version
		}
		for k, v := range c.header {
			h[k] = v
		}
		a := d.do(raw{method: http.MethodPost, path: "/a2a/" + d.agent.Agent.ID, header: h, body: c.body})
		if a.status != http.StatusUnauthorized {
			t.Errorf("%s: %d %s, want 401", c.name, a.status, a.body)
			continue
		}
		version := c.version
		if version == "" {
			version = "0.3"
		}
		checkRPCError(t, c.name, version, a, -31401, "UNAUTHENTICATED")
		m := rawFields(t, a)
		if got, want := string(m["id"]), meshtest.JSON(c.id); got != want {
			t.Errorf("%s: id %s, want %s", c.name, got, want)
		}
	}
}

// TestAuth_AnIdentityProvidersTokenIsCheckedOnceItsKeysCanBeFetched: while
// the identity provider's keys cannot be fetched, its token is not refused
// as a bad credential (the caller is told to try again); once the provider
// answers, the token is taken within moments, not when the key cache's own
// schedule fetches again (15 minutes after a failure); and a token signed
// with a key the provider rotated to is taken as well.
func TestAuth_AnIdentityProvidersTokenIsCheckedOnceItsKeysCanBeFetched(t *testing.T) {
	t.Parallel()
	provider := newIDP(t)
	provider.down.Store(true)
	d := startEndpoint(t, endpointOptions{platform: func(c *platform.Config) {
		c.A2AJWKSURL = provider.srv.URL
		c.A2AJWTIssuer = "https://idp.test"
		c.A2AJWTAudience = "a2a-mesh"
	}})
	send := func() *answer {
		tok := provider.token(t, "https://idp.test", "a2a-mesh", "alice", "a2a:send a2a:read", time.Now().Add(time.Hour))
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{
			"message": map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": "idp"}}}}})
		return d.do(raw{method: http.MethodPost, path: "/a2a/" + d.agent.Agent.ID, body: string(b),
			header: map[string]string{"A2A-Version": "1.0", "Authorization": "Bearer " + tok}})
	}
	taken := func(a *answer) bool {
		return a.status == http.StatusOK && a.json(t)["result"] != nil
	}

	a := send()
	if a.status == http.StatusUnauthorized || taken(a) {
		t.Fatalf("a token while the provider's keys cannot be fetched: %d %s, want a try-again error", a.status, a.body)
	}
	if code := int(rpcError(t, a)["code"].(float64)); code != -32603 {
		t.Fatalf("a token while the provider's keys cannot be fetched: code %d, want -32603 (try again): %s", code, a.body)
	}

	waitTaken := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			a := send()
			if taken(a) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: still %d %s", what, a.status, a.body)
			}
			<-time.After(100 * time.Millisecond)
		}
	}
	provider.down.Store(false)
	waitTaken("a token once the provider answers again")
	provider.rotate(t, "rotated-key")
	waitTaken("a token signed with the provider's new key")
}
