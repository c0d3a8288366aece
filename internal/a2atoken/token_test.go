package a2atoken

import (
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	_ "crypto/sha512" // HS384 and HS512 tokens
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

func testSigner(t *testing.T) *Signer {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return &Signer{key: key}
}

// mint builds a compact JWT by hand, so the tests do not depend on the
// library they check: header and claims as given, signed by sign.
func mint(t *testing.T, header, claims map[string]any, sign func(input []byte) []byte) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	input := enc(header) + "." + enc(claims)
	return input + "." + base64.RawURLEncoding.EncodeToString(sign([]byte(input)))
}

func hmacWith(h crypto.Hash, key []byte) func([]byte) []byte {
	return func(input []byte) []byte {
		m := hmac.New(h.New, key)
		m.Write(input)
		return m.Sum(nil)
	}
}

// goodClaims are claims the signer accepts, valid from a minute ago for
// five minutes.
func goodClaims() map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": Issuer, "sub": "agent-a", "aud": "agent-b",
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(5 * time.Minute).Unix(),
	}
}

func TestSignVerify_RoundTripKeepsEveryClaim(t *testing.T) {
	s := testSigner(t)
	issued := time.Now().Truncate(time.Second)
	tok, err := s.Sign(TokenRequest{
		Subject: "agent-a", Audience: "agent-b", Scopes: []string{"a2a:send", "a2a:read"},
		TTL: 2 * time.Minute, IssuedAt: issued,
		ParentTaskRunID: "run-1", DelegationChain: []string{"agent-z", "agent-a"},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Verify(tok, "other", "agent-b")
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if c.Issuer != Issuer || c.Subject != "agent-a" || !slices.Equal(c.Audience, []string{"agent-b"}) {
		t.Errorf("registered claims = %q %q %q", c.Issuer, c.Subject, c.Audience)
	}
	if !slices.Equal(c.Scopes(), []string{"a2a:send", "a2a:read"}) {
		t.Errorf("scopes = %q", c.Scopes())
	}
	if c.ParentTaskRunID != "run-1" || !slices.Equal(c.DelegationChain, []string{"agent-z", "agent-a"}) {
		t.Errorf("delegation = %q %q", c.ParentTaskRunID, c.DelegationChain)
	}
	if !c.IssuedAt.Equal(issued) || !c.NotBefore.Equal(issued.Add(-Skew)) || !c.ExpiresAt.Equal(issued.Add(2*time.Minute)) {
		t.Errorf("times = iat %v nbf %v exp %v, issued %v", c.IssuedAt, c.NotBefore, c.ExpiresAt, issued)
	}
}

func TestSign_WireShape(t *testing.T) {
	s := testSigner(t)
	tok, err := s.Sign(TokenRequest{Subject: "agent-a", Audience: "agent-b"})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	var header, claims map[string]any
	for i, dst := range []*map[string]any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatal(err)
		}
	}
	if header["alg"] != "HS256" {
		t.Errorf("alg = %v", header["alg"])
	}
	// One audience is a string; empty private claims are absent.
	if claims["aud"] != "agent-b" {
		t.Errorf("aud = %#v, want the string", claims["aud"])
	}
	for _, name := range []string{"scope", "parent_task_run_id", "delegation_chain"} {
		if _, ok := claims[name]; ok {
			t.Errorf("empty claim %s is present", name)
		}
	}
	exp, iat := claims["exp"].(float64), claims["iat"].(float64)
	if exp-iat != (5 * time.Minute).Seconds() {
		t.Errorf("default ttl = %vs", exp-iat)
	}
}

func TestSign_RequiresSubjectAndAudience(t *testing.T) {
	s := testSigner(t)
	for _, req := range []TokenRequest{{Subject: "a"}, {Audience: "b"}} {
		if _, err := s.Sign(req); err == nil {
			t.Errorf("Sign(%+v) succeeded", req)
		}
	}
}

func TestVerify_AcceptsHandMadeHS256(t *testing.T) {
	s := testSigner(t)
	claims := goodClaims()
	claims["aud"] = []string{"x", "agent-b"}
	claims["scope"] = "a2a:send"
	claims["delegation_chain"] = []string{"agent-a"}
	tok := mint(t, map[string]any{"alg": "HS256", "typ": "JWT"}, claims, hmacWith(crypto.SHA256, s.key))
	c, err := s.Verify(tok, "agent-b")
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if c.Scope != "a2a:send" || !slices.Equal(c.DelegationChain, []string{"agent-a"}) {
		t.Errorf("claims = %+v", c)
	}
}

func TestVerify_RefusesOtherAlgorithms(t *testing.T) {
	s := testSigner(t)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		header map[string]any
		sign   func([]byte) []byte
	}{
		{"none", map[string]any{"alg": "none"}, func([]byte) []byte { return nil }},
		{"None spelt otherwise", map[string]any{"alg": "NONE"}, func([]byte) []byte { return nil }},
		{"RS256 header, HMAC of the secret", map[string]any{"alg": "RS256"}, hmacWith(crypto.SHA256, s.key)},
		{"RS256 signed with an RSA key", map[string]any{"alg": "RS256"}, func(in []byte) []byte {
			h := sha256.Sum256(in)
			sig, err := rsa.SignPKCS1v15(rand.Reader, rsaKey, crypto.SHA256, h[:])
			if err != nil {
				t.Fatal(err)
			}
			return sig
		}},
		{"HS384 with the secret", map[string]any{"alg": "HS384"}, hmacWith(crypto.SHA384, s.key)},
		{"HS512 with the secret", map[string]any{"alg": "HS512"}, hmacWith(crypto.SHA512, s.key)},
		{"no alg", map[string]any{"typ": "JWT"}, hmacWith(crypto.SHA256, s.key)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok := mint(t, tc.header, goodClaims(), tc.sign)
			if _, err := s.VerifyAnyAudience(tok); err == nil {
				t.Fatal("token accepted")
			}
		})
	}
}

func TestVerify_RefusesBadClaims(t *testing.T) {
	s := testSigner(t)
	now := time.Now()
	cases := []struct {
		name string
		edit func(map[string]any)
		key  []byte
	}{
		{name: "another key", edit: func(map[string]any) {}, key: []byte("not-the-platform-key-0123456789ab")},
		{name: "another issuer", edit: func(c map[string]any) { c["iss"] = "https://idp.example" }},
		{name: "no issuer", edit: func(c map[string]any) { delete(c, "iss") }},
		{name: "no expiry", edit: func(c map[string]any) { delete(c, "exp") }},
		{name: "expired beyond the skew", edit: func(c map[string]any) { c["exp"] = now.Add(-Skew - 5*time.Second).Unix() }},
		{name: "not yet valid beyond the skew", edit: func(c map[string]any) { c["nbf"] = now.Add(Skew + time.Minute).Unix() }},
		{name: "scope of the wrong type", edit: func(c map[string]any) { c["scope"] = 7 }},
		{name: "chain of the wrong type", edit: func(c map[string]any) { c["delegation_chain"] = "agent-a" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claims := goodClaims()
			tc.edit(claims)
			key := s.key
			if tc.key != nil {
				key = tc.key
			}
			tok := mint(t, map[string]any{"alg": "HS256"}, claims, hmacWith(crypto.SHA256, key))
			if _, err := s.VerifyAnyAudience(tok); err == nil {
				t.Fatal("token accepted")
			}
		})
	}
}

func TestVerify_TimesWithinTheSkewAndFutureIssuedAtAreAccepted(t *testing.T) {
	s := testSigner(t)
	now := time.Now()
	claims := goodClaims()
	claims["exp"] = now.Add(-Skew / 2).Unix()
	claims["nbf"] = now.Add(Skew / 2).Unix()
	claims["iat"] = now.Add(time.Hour).Unix()
	tok := mint(t, map[string]any{"alg": "HS256"}, claims, hmacWith(crypto.SHA256, s.key))
	if _, err := s.VerifyAnyAudience(tok); err != nil {
		t.Fatalf("refused: %v", err)
	}
}

func TestVerify_RefusesAnotherAudience(t *testing.T) {
	s := testSigner(t)
	tok, err := s.Sign(TokenRequest{Subject: "agent-a", Audience: "agent-b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(tok, "agent-c", "https://mesh.example/a2a/agent-c"); err == nil || err.Error() != "token is for another audience" {
		t.Fatalf("err = %v", err)
	}
	if _, err := s.VerifyAnyAudience(tok); err != nil {
		t.Fatalf("any audience: %v", err)
	}
}

func TestIssuerOf(t *testing.T) {
	s := testSigner(t)
	expired, err := s.Sign(TokenRequest{Subject: "a", Audience: "b", IssuedAt: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	other := mint(t, map[string]any{"alg": "RS256"}, map[string]any{"iss": "https://idp.example"}, func([]byte) []byte { return []byte("x") })
	for tok, want := range map[string]string{
		expired:       Issuer,
		other:         "https://idp.example",
		"a.b.c":       "",
		"not a token": "",
	} {
		if got := IssuerOf(tok); got != want {
			t.Errorf("IssuerOf(%.20s) = %q, want %q", tok, got, want)
		}
	}
}
