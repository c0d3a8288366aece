package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/gateway"
	"github.com/rs/zerolog"
)

// noRedirects sees a sign-in's own answer rather than the page it leads to.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// webSession is a signed-in browser, as far as the platform can tell.
type webSession struct {
	cookie *http.Cookie
	csrf   string
}

// header carries the session cookie, and the CSRF token when csrf is set.
func (s webSession) header(csrf bool) http.Header {
	h := http.Header{"Cookie": {s.cookie.String()}}
	if csrf {
		h.Set(gateway.HeaderCSRFToken, s.csrf)
	}
	return h
}

// getRaw sends GET url without following redirects.
func getRaw(t *testing.T, url string) *meshtest.Response {
	t.Helper()
	resp, err := noRedirects.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return &meshtest.Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// loginLink issues a sign-in link with the owner credential.
func loginLink(t *testing.T, p *meshtest.Platform, body any) (url string, expires time.Time) {
	t.Helper()
	var link struct {
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/web/login-links", Owner: true, JSON: body}).
		Expect(t, http.StatusCreated).Decode(t, &link)
	return link.URL, link.ExpiresAt
}

// signInAt opens a sign-in link as a browser would and reads the session's
// CSRF token; seen receives the sign-in's own answer.
func signInAt(t *testing.T, p *meshtest.Platform, link string, seen func(*meshtest.Response)) webSession {
	t.Helper()
	resp := getRaw(t, link)
	if seen != nil {
		seen(resp)
	}
	if resp.Status != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("sign-in answered %d (Location %q), want 303 to /; body %s", resp.Status, resp.Header.Get("Location"), resp.Body)
	}
	cookies := (&http.Response{Header: resp.Header}).Cookies()
	if len(cookies) != 1 {
		t.Fatalf("sign-in set %d cookies, want 1", len(cookies))
	}
	s := webSession{cookie: cookies[0]}
	var info struct {
		CSRFToken string `json:"csrf_token"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/web/session", Header: s.header(false)}).Expect(t, http.StatusOK).Decode(t, &info)
	s.csrf = info.CSRFToken
	return s
}

func signIn(t *testing.T, p *meshtest.Platform) webSession {
	t.Helper()
	link, _ := loginLink(t, p, nil)
	return signInAt(t, p, link, nil)
}

func TestWebSignIn_ALinkOpensASessionWithAStrictHttpOnlyCookie(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	resp := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/web/login-links", Owner: true}).Expect(t, http.StatusCreated)
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the link is cacheable: Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	var link struct {
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	resp.Decode(t, &link)
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(p.APIBase) + `/login\?code=a2alogin_[A-Za-z0-9_-]{43}$`).MatchString(link.URL) {
		t.Fatalf("link %q is not <public URL>/login?code=<one-time code>", link.URL)
	}
	if left := time.Until(link.ExpiresAt); left <= time.Minute || left > 2*time.Minute {
		t.Fatalf("the link expires in %s, want 2 minutes", left)
	}

	answer := getRaw(t, link.URL)
	for name, want := range map[string]string{"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "Location": "/"} {
		if got := answer.Header.Get(name); got != want {
			t.Errorf("sign-in answer %s: %q, want %q", name, got, want)
		}
	}
	if answer.Status != http.StatusSeeOther || len(answer.Body) != 0 {
		t.Fatalf("sign-in answered %d with %q", answer.Status, answer.Body)
	}
	raw := answer.Header.Get("Set-Cookie")
	for _, attr := range []string{"a2a_session=a2aweb_", "Path=/", "HttpOnly", "SameSite=Strict", "Expires="} {
		if !strings.Contains(raw, attr) {
			t.Errorf("Set-Cookie %q lacks %s", raw, attr)
		}
	}
	if strings.Contains(raw, "Secure") || strings.Contains(raw, "Domain") {
		t.Errorf("Set-Cookie %q: no Secure on plain http, and no Domain", raw)
	}

	s := webSession{cookie: (&http.Response{Header: answer.Header}).Cookies()[0]}
	info := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/web/session", Header: s.header(false)}).Expect(t, http.StatusOK)
	var got struct {
		CSRFToken  string    `json:"csrf_token"`
		ExpiresAt  time.Time `json:"expires_at"`
		APIBase    string    `json:"api_base"`
		EventTypes []string  `json:"event_types"`
	}
	info.Decode(t, &got)
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(got.CSRFToken) || got.APIBase != p.APIBase || len(got.EventTypes) != len(mesh.EventCatalog) {
		t.Fatalf("session info %+v", got)
	}
	if left := time.Until(got.ExpiresAt); left < 11*time.Hour || left > 12*time.Hour {
		t.Errorf("the session ends in %s, want 12 hours without use", left)
	}
	if strings.Contains(string(info.Body), s.cookie.Value) {
		t.Fatal("the session info holds the session id")
	}
	// With the owner credential there is no session, so no CSRF token.
	var owner map[string]any
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/web/session", Owner: true}).Expect(t, http.StatusOK).Decode(t, &owner)
	if _, ok := owner["csrf_token"]; ok {
		t.Fatalf("owner session info %v has a CSRF token", owner)
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts", Header: s.header(false)}).Expect(t, http.StatusOK)
}

func TestWebSignIn_ACodeWorksOnceEvenUnderConcurrentUse(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	link, _ := loginLink(t, p, nil)
	// A link preview's HEAD request does not use the code up.
	head, err := noRedirects.Head(link)
	if err != nil {
		t.Fatal(err)
	}
	head.Body.Close()
	if head.Header.Get("Set-Cookie") != "" {
		t.Fatal("HEAD signed in")
	}
	const tries = 8
	answers := make([]*meshtest.Response, tries)
	var wg sync.WaitGroup
	for i := range tries {
		wg.Go(func() { answers[i] = getRaw(t, link) })
	}
	wg.Wait()
	won := 0
	for _, a := range answers {
		switch a.Status {
		case http.StatusSeeOther:
			won++
		case http.StatusUnauthorized:
			if a.Header.Get("Set-Cookie") != "" || !strings.Contains(string(a.Body), "already used") {
				t.Errorf("a refused sign-in set %q and said %s", a.Header.Get("Set-Cookie"), a.Body)
			}
		default:
			t.Errorf("sign-in answered %d", a.Status)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d concurrent sign-ins with one code succeeded, want exactly 1", won, tries)
	}
}

func TestWebSignIn_ExpiredUnknownAndMissingCodesSignNobodyIn(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	link, expires := loginLink(t, p, map[string]any{"ttl_seconds": 1})
	// Waiting for the link's own expiry time; nothing else is awaited.
	time.Sleep(time.Until(expires) + 50*time.Millisecond)
	expired := getRaw(t, link)
	if expired.Status != http.StatusUnauthorized || !strings.Contains(string(expired.Body), "expired") || expired.Header.Get("Set-Cookie") != "" {
		t.Fatalf("an expired link answered %d, Set-Cookie %q: %s", expired.Status, expired.Header.Get("Set-Cookie"), expired.Body)
	}
	if ct := expired.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("the refusal is %q, want a page", ct)
	}
	unknown := getRaw(t, p.APIBase+"/login?code="+secret.NewToken(secret.PrefixSignIn))
	if unknown.Status != http.StatusUnauthorized || !strings.Contains(string(unknown.Body), "already used") {
		t.Fatalf("an unknown code answered %d: %s", unknown.Status, unknown.Body)
	}
	// A code in the page is text, never markup.
	hostile := getRaw(t, p.APIBase+"/login?code=%3Cscript%3Ealert(1)%3C/script%3E")
	if strings.Contains(string(hostile.Body), "<script>") {
		t.Fatal("the refusal page echoes markup")
	}
	none := getRaw(t, p.APIBase+"/login")
	if none.Status != http.StatusSeeOther || none.Header.Get("Location") != "/" || none.Header.Get("Set-Cookie") != "" {
		t.Fatalf("/login without a code answered %d (Location %q, Set-Cookie %q)", none.Status, none.Header.Get("Location"), none.Header.Get("Set-Cookie"))
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/web/login-links", Owner: true, JSON: map[string]any{"ttl_seconds": -1}}).
		ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
}

func TestWebSession_StateChangesNeedTheCSRFTokenFromThePlatformsOwnOrigin(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	s := signIn(t, p)
	create := func(h http.Header) *meshtest.Response {
		return p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Header: h, JSON: map[string]any{"name": "csrf"}})
	}
	e := create(s.header(false)).ExpectError(t, http.StatusForbidden, mesh.CodeForbidden)
	if !strings.Contains(e.Error.Message, gateway.HeaderCSRFToken) {
		t.Errorf("the refusal %q does not name the missing header", e.Error.Message)
	}
	wrong := s.header(false)
	wrong.Set(gateway.HeaderCSRFToken, strings.Repeat("0", 64))
	create(wrong).ExpectError(t, http.StatusForbidden, mesh.CodeForbidden)
	other := signIn(t, p)
	crossed := s.header(false)
	crossed.Set(gateway.HeaderCSRFToken, other.csrf)
	create(crossed).ExpectError(t, http.StatusForbidden, mesh.CodeForbidden)
	foreign := s.header(true)
	foreign.Set("Origin", "https://evil.example")
	foreign.Set("Sec-Fetch-Site", "cross-site")
	create(foreign).ExpectError(t, http.StatusForbidden, mesh.CodeForbidden)
	sameSite := s.header(true)
	sameSite.Set("Origin", p.APIBase)
	sameSite.Set("Sec-Fetch-Site", "same-origin")
	create(sameSite).Expect(t, http.StatusCreated)
	create(s.header(true)).Expect(t, http.StatusCreated)

	// Reading needs no token; a wrong bearer is not rescued by the cookie.
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts", Header: s.header(false)}).Expect(t, http.StatusOK)
	bad := s.header(true)
	bad.Set("Authorization", "Bearer "+secret.NewToken(secret.PrefixOwner))
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts", Header: bad}).ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
	forged := http.Header{"Cookie": {gateway.SessionCookie + "=" + secret.NewToken(secret.PrefixWebSession)}}
	e = p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts", Header: forged}).ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
	if !strings.Contains(e.Error.Message, "a2a-platform login") {
		t.Errorf("an unknown session is told %q; it should say how to sign in", e.Error.Message)
	}

	var agents struct {
		Agents []mesh.Agent `json:"agents"`
	}
	p.Do(http.MethodGet, "/agent-accounts", nil, &agents)
	if len(agents.Agents) != 2 {
		t.Fatalf("%d agents created, want the 2 accepted requests' only", len(agents.Agents))
	}
}

func TestWebSession_OnlyTheOwnerCredentialMakesSignInLinks(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	s := signIn(t, p)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/web/login-links", Header: s.header(true)}).ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/web/login-links"}).ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/web/session"}).ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
}

func TestWebSession_SigningOutEndsTheSession(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	s := signIn(t, p)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/web/logout", Header: s.header(false)}).ExpectError(t, http.StatusForbidden, mesh.CodeForbidden)
	out := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/web/logout", Header: s.header(true)}).Expect(t, http.StatusNoContent)
	if c := out.Header.Get("Set-Cookie"); !strings.Contains(c, gateway.SessionCookie+"=;") || !strings.Contains(c, "Max-Age=0") {
		t.Errorf("signing out sets %q, want the cookie cleared", c)
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts", Header: s.header(false)}).ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
}

// startGateway runs a second gateway on the platform's bus with its own
// settings, for what the platform's defaults make slow to observe.
func startGateway(t *testing.T, p *meshtest.Platform, cfg gateway.Config) *meshtest.Platform {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Conn, cfg.Logger, cfg.Listener = p.Conn(), zerolog.Nop(), ln
	g := gateway.New(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop(time.Second) })
	return meshtest.Remote(t, "http://"+g.Addr(), p.OwnerToken)
}

func TestWebSession_EndsWhenIdleAndAtItsAbsoluteLimit(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	const idle, limit = time.Second, 3 * time.Second
	g := startGateway(t, p, gateway.Config{SessionIdle: idle, SessionMaxAge: limit})
	use := func(s webSession) int {
		return g.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts", Header: s.header(false)}).Status
	}

	// Used often, a session outlives its idle time, up to its limit.
	signedIn := time.Now()
	s := signIn(t, g)
	var ended time.Time
	for ended.IsZero() {
		if time.Since(signedIn) > 10*limit {
			t.Fatal("the session outlived its absolute limit")
		}
		switch use(s) {
		case http.StatusOK:
		case http.StatusUnauthorized:
			ended = time.Now()
		default:
			t.Fatal("unexpected answer")
		}
		time.Sleep(idle / 7)
	}
	if lived := ended.Sub(signedIn); lived < limit-100*time.Millisecond {
		t.Fatalf("a session in use ended after %s, before its limit of %s", lived, limit)
	} else if lived < 2*idle {
		t.Fatalf("the session lived %s: its use never slid the idle expiry", lived)
	}

	// Left alone longer than its idle time, it ends.
	s = signIn(t, g)
	if use(s) != http.StatusOK {
		t.Fatal("a fresh session was refused")
	}
	// The idle time is what is tested: the session must not be used meanwhile.
	time.Sleep(idle + 200*time.Millisecond)
	if got := use(s); got != http.StatusUnauthorized {
		t.Fatalf("a session idle for longer than %s answered %d, want 401", idle, got)
	}
}

func TestWebSession_HTTPSPlatformsUseASecureHostCookie(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	g := startGateway(t, p, gateway.Config{PublicURL: "https://mesh.example.test/"})
	link, _ := loginLink(t, g, nil)
	if !strings.HasPrefix(link, "https://mesh.example.test/login?code=") {
		t.Fatalf("link %q is not on the public URL", link)
	}
	answer := getRaw(t, g.APIBase+strings.TrimPrefix(link, "https://mesh.example.test"))
	raw := answer.Header.Get("Set-Cookie")
	for _, attr := range []string{gateway.SecureSessionCookie + "=a2aweb_", "Secure", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(raw, attr) {
			t.Errorf("Set-Cookie %q lacks %s", raw, attr)
		}
	}
	s := webSession{cookie: (&http.Response{Header: answer.Header}).Cookies()[0]}
	var info struct {
		APIBase string `json:"api_base"`
	}
	g.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/web/session", Header: s.header(false)}).Expect(t, http.StatusOK).Decode(t, &info)
	if info.APIBase != "https://mesh.example.test" {
		t.Fatalf("api_base %q, want the public URL", info.APIBase)
	}
	// The plain cookie name means nothing on an https platform.
	plain := http.Header{"Cookie": {gateway.SessionCookie + "=" + s.cookie.Value}}
	g.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts", Header: plain}).ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
}

// TestWebSignIn_CodesAndSessionsNeverAppearInLogsOrTheStore signs in, works,
// fails to sign in and signs out with debug logs captured, then searches
// the logs and every file the platform stored for the plain values.
func TestWebSignIn_CodesAndSessionsNeverAppearInLogsOrTheStore(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	link, _ := loginLink(t, p, nil)
	code := strings.TrimPrefix(link, p.APIBase+"/login?code=")
	s := signInAt(t, p, link, nil)
	getRaw(t, link) // used again: refused
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Header: s.header(true), JSON: map[string]any{"name": "logged"}}).Expect(t, http.StatusCreated)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Header: s.header(false), JSON: map[string]any{"name": "refused"}}).Expect(t, http.StatusForbidden)
	unused, _ := loginLink(t, p, nil)
	other := signIn(t, p)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/web/logout", Header: other.header(true)}).Expect(t, http.StatusNoContent)

	p.Stop()
	logs := p.Logs.String()
	if !strings.Contains(logs, `"path":"/login"`) || !strings.Contains(logs, `"path":"/web/session"`) {
		t.Fatalf("the request log does not show the sign-ins; the scan would prove nothing:\n%s", logs)
	}
	texts := map[string]string{"logs": logs}
	stored := meshtest.Files(t, p.DataDir, platform.OwnerTokenPath(p.DataDir))
	found := false
	for path, content := range stored {
		texts["file "+path] = content
		found = found || strings.Contains(content, secret.Hash(s.cookie.Value))
	}
	if !found {
		t.Fatal("the session's hash is not in the store; the store scan reads nothing useful")
	}
	secrets := []string{code, strings.TrimPrefix(unused, p.APIBase+"/login?code="), s.cookie.Value, s.csrf, other.cookie.Value, other.csrf}
	meshtest.AssertNoSecrets(t, secrets, texts)
}

// TestWebPages_ServedWithStrictSecurityHeaders: the page, its views and its
// assets come from the platform with a Content-Security-Policy that forbids
// inline script, and the embedded files hold none.
func TestWebPages_ServedWithStrictSecurityHeaders(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	cases := map[string]string{
		"/": "text/html", "/agents/" + mesh.NewID(): "text/html", "/tasks": "text/html", "/tasks/" + mesh.NewID(): "text/html",
		"/integrations": "text/html", "/assets/app.js": "text/javascript", "/assets/style.css": "text/css", "/assets/icon.svg": "image/svg+xml",
	}
	for path, ct := range cases {
		resp := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: path}).Expect(t, http.StatusOK)
		if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, ct) {
			t.Errorf("GET %s: Content-Type %q, want %s", path, got, ct)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		for name, want := range map[string]string{"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"} {
			if got := resp.Header.Get(name); got != want {
				t.Errorf("GET %s: %s %q, want %q", path, name, got, want)
			}
		}
		etag := resp.Header.Get("ETag")
		again := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: path, Header: http.Header{"If-None-Match": {etag}}})
		if etag == "" || again.Status != http.StatusNotModified {
			t.Errorf("GET %s with If-None-Match %q: HTTP %d, want 304", path, etag, again.Status)
		}
	}
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/assets/nope.js"}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/nope"}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)

	// No inline script, handler or style in the served HTML.
	scriptTag := regexp.MustCompile(`(?i)<script[^>]*>`)
	inline := regexp.MustCompile(`(?i)\son[a-z]+=|\sstyle=|<style`)
	for _, path := range []string{"/", "/login?code=x"} {
		body := getRaw(t, p.APIBase+path).Body
		for _, tag := range scriptTag.FindAll(body, -1) {
			if !strings.Contains(string(tag), "src=") {
				t.Errorf("GET %s has an inline script: %s", path, tag)
			}
		}
		if m := inline.Find(body); m != nil {
			t.Errorf("GET %s has an inline handler or style: %s", path, m)
		}
	}
	if !strings.Contains(string(getRaw(t, p.APIBase+"/").Body), `<script type="module" src="/assets/app.js">`) {
		t.Error("GET / does not load the page's module")
	}
}
