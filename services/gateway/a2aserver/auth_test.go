package a2aserver_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	jwxt "github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/a2amesh/a2amesh/internal/a2atoken"
	"github.com/a2amesh/a2amesh/internal/meshtest"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// idp is an external identity provider: an RSA key whose public half a
// JWKS endpoint (a loopback httptest server) serves.
type idp struct {
	srv *httptest.Server
	key jwk.Key
}

func newIDP(t *testing.T) *idp {
	t.Helper()
	raw, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	key, err := jwk.Import(raw)
	if err != nil {
		t.Fatal(err)
	}
	_ = key.Set(jwk.KeyIDKey, "test-key")
	_ = key.Set(jwk.AlgorithmKey, jwa.RS256())
	pub, err := key.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	body, _ := json.Marshal(set)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return &idp{srv: srv, key: key}
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
	d.p.Do(http.MethodPatch, "/agent-accounts/"+agentID, map[string]any{"public": true}, nil)
	meshtest.Eventually(t, 5*time.Second, func() bool {
		card := d.do(raw{method: http.MethodGet, path: "/a2a/" + agentID + "/agent-card"}).json(t)
		_, secured := card["securityRequirements"]
		return !secured
	}, func() string { return "the card still asks for a credential" })
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
	// Push configurations are not for anonymous callers.
	pushB, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tasks/pushNotificationConfig/set", "params": map[string]any{
		"taskId": res["id"], "pushNotificationConfig": map[string]any{"url": "https://example.com/hook"}}})
	checkRPCError(t, "anonymous push config", "0.3", d.do(raw{method: http.MethodPost, path: "/a2a/" + agentID, body: string(pushB)}), -31403, "UNAUTHORIZED")
}
