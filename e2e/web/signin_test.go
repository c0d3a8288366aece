package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestWeb_SignInIsRefusedForAUsedOrExpiredLink: a link works once and only
// until it expires; the refusal says so in words and signs nobody in.
func TestWeb_SignInIsRefusedForAUsedOrExpiredLink(t *testing.T) {
	p := meshtest.StartPlatform(t)
	b := newBrowser(t)

	link, _ := issueLoginLink(t, p, 0)
	b.open(link)
	b.waitText("main h1", "Agents")
	b.shot("signed in with a fresh link")

	// The same link again, in a browser with no session: refused.
	other := newBrowser(t)
	other.open(link)
	other.waitText("main h1", "cannot be used")
	other.waitText("#signin-reason", "already used")
	other.shot("used link refused")
	other.checkA11y("the refused sign-in page")
	other.open(p.APIBase + "/")
	other.waitText("main h1", "Sign in")
	other.waitText("main", "a2a-platform login")
	other.shot("signed out page")
	other.checkA11y("the sign-in page")

	// A link past its expiry.
	expiredLink, expires := issueLoginLink(t, p, 1)
	// Waiting for the link's own expiry time; nothing else is awaited.
	time.Sleep(time.Until(expires) + 50*time.Millisecond)
	other.open(expiredLink)
	other.waitText("#signin-reason", "expired")
	other.shot("expired link refused")
	other.open(p.APIBase + "/")
	other.waitText("main h1", "Sign in")

	// The refusals answer 401 and set no cookie.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Fatalf("a used link answered %d with cookies %v", resp.StatusCode, resp.Cookies())
	}
}

// TestWeb_SessionCookieIsHttpOnlyStrictAndStateChangesNeedTheCSRFToken
// checks the session cookie's attributes, that the page's own requests
// work, that a state-changing request with the cookie but without the
// session's CSRF token is refused, and that signing out ends the session.
func TestWeb_SessionCookieIsHttpOnlyStrictAndStateChangesNeedTheCSRFToken(t *testing.T) {
	p := meshtest.StartPlatform(t)
	b := newBrowser(t)
	b.signIn(p)

	ctx, cancel := context.WithTimeout(b.ctx, waitStart)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{p.APIBase}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cookies) != 1 {
		t.Fatalf("%d cookies, want the session's only: %+v", len(res.Cookies), res.Cookies)
	}
	c := res.Cookies[0]
	if c.Name != "a2a_session" || !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict || c.Path != "/" || c.Secure {
		t.Fatalf("session cookie %s: HttpOnly %v, SameSite %q, Path %q, Secure %v; want HttpOnly, Strict, /, not Secure on http",
			c.Name, c.HTTPOnly, c.SameSite, c.Path, c.Secure)
	}
	if !strings.HasPrefix(c.Value, "a2aweb_") {
		t.Fatalf("the session id has no recognisable prefix")
	}
	if got := js[string](b, "document.cookie"); strings.Contains(got, c.Value) {
		t.Fatal("the page's script can read the session cookie")
	}

	post := func(headers string) int {
		t.Helper()
		return js[int](b, `fetch('/agent-accounts', {method: 'POST', headers: Object.assign({'Content-Type': 'application/json'}, `+headers+`),
			body: JSON.stringify({name: 'csrf probe'})}).then((r) => r.status)`)
	}
	if got := post(`{}`); got != http.StatusForbidden {
		t.Fatalf("POST with the cookie and no CSRF token: HTTP %d, want 403", got)
	}
	if got := post(`{'X-CSRF-Token': 'not-the-token'}`); got != http.StatusForbidden {
		t.Fatalf("POST with a wrong CSRF token: HTTP %d, want 403", got)
	}
	token := js[string](b, `fetch('/web/session').then((r) => r.json()).then((s) => s.csrf_token)`)
	if got := post(`{'X-CSRF-Token': '` + token + `'}`); got != http.StatusCreated {
		t.Fatalf("POST with the CSRF token: HTTP %d, want 201", got)
	}
	var agents struct {
		Agents []struct{ Name string } `json:"agents"`
	}
	p.Do(http.MethodGet, "/agent-accounts", nil, &agents)
	if len(agents.Agents) != 1 {
		t.Fatalf("%d agents after one accepted and two refused creates", len(agents.Agents))
	}
	if got := js[int](b, `fetch('/agent-accounts').then((r) => r.status)`); got != http.StatusOK {
		t.Fatalf("GET with the cookie: HTTP %d", got)
	}

	// Signing out ends the session on the platform, not only in the page.
	b.click("#sign-out")
	b.waitText("main h1", "signed out")
	b.shot("signed out")
	if got := js[int](b, `fetch('/agent-accounts').then((r) => r.status)`); got != http.StatusUnauthorized {
		t.Fatalf("GET after signing out: HTTP %d, want 401", got)
	}
	req, _ := http.NewRequest(http.MethodGet, p.APIBase+"/agent-accounts", nil)
	req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the old session cookie still works: HTTP %d", resp.StatusCode)
	}
}
