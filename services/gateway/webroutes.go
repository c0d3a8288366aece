package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/gateway/web"
)

// Header and cookie names of the web page's sign-in session.
const (
	// HeaderCSRFToken carries the session's anti-forgery token on every
	// state-changing request made with the session cookie.
	HeaderCSRFToken = "X-CSRF-Token"
	// SessionCookie is the cookie of a session on a plain-HTTP platform;
	// SecureSessionCookie the one on an https platform (a __Host- cookie:
	// Secure, Path=/, no Domain, so no other host can set or read it).
	SessionCookie       = "a2a_session"
	SecureSessionCookie = "__Host-a2a_session"
)

// webRoutes registers the page, its assets, and sign-in.
func (g *Gateway) webRoutes(mux *http.ServeMux) {
	pages := web.New()
	g.handle(mux, "GET /{$}", http.HandlerFunc(pages.ServeShell))
	for _, path := range web.ClientRoutes {
		g.handle(mux, "GET "+path, http.HandlerFunc(pages.ServeShell))
	}
	g.handle(mux, "GET /assets/{file}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !pages.HasAsset(r.PathValue("file")) {
			g.writeError(w, r, mesh.Errorf(mesh.CodeNotFound, "no asset %q", r.PathValue("file")))
			return
		}
		pages.ServeAsset(w, r)
	}))
	g.handle(mux, "GET /login", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { g.signIn(w, r, pages) }))
	g.ownerOnly(mux, "POST /web/login-links", g.issueLoginLink)
	g.people(mux, "GET /web/session", g.sessionInfo)
	g.people(mux, "POST /web/logout", g.signOut)
}

// loginLink is a one-time sign-in link.
type loginLink struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// issueLoginLink serves POST /web/login-links; its optional body's
// ttl_seconds shortens the link's lifetime below the default.
func (g *Gateway) issueLoginLink(w http.ResponseWriter, r *http.Request) {
	d, ok := g.decodeTTL(w, r)
	if !ok {
		return
	}
	ttl := g.cfg.SignInLinkTTL
	if d > 0 && d < ttl {
		ttl = d
	}
	code, expires, err := g.sessions.issueCode(r.Context(), ttl)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, loginLink{URL: g.publicURL + "/login?code=" + code, ExpiresAt: expires})
}

// signIn serves GET /login?code=…: it redeems the one-time code, sets the
// session cookie and redirects to the page, so the link leaves the browser's
// history. Neither the code nor the session id is ever logged (the request
// log has no query strings).
func (g *Gateway) signIn(w http.ResponseWriter, r *http.Request, pages *web.Pages) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	code := r.URL.Query().Get("code")
	if code == "" {
		seeOther(w, "/")
		return
	}
	if r.Method == http.MethodHead {
		// Link previews and checkers must not use up the code.
		w.WriteHeader(http.StatusOK)
		return
	}
	if err := g.sessions.redeemCode(r.Context(), code); err != nil {
		g.signInFailed(w, r, pages, err)
		return
	}
	id, s, err := g.sessions.start(r.Context())
	if err != nil {
		g.signInFailed(w, r, pages, err)
		return
	}
	http.SetCookie(w, g.sessionCookie(id, s.CreatedAt.Add(g.cfg.SessionMaxAge)))
	seeOther(w, "/")
}

func (g *Gateway) signInFailed(w http.ResponseWriter, r *http.Request, pages *web.Pages, err error) {
	reason := "The platform could not sign you in just now. Try again with a new link."
	// The sentinels are compared by identity: errors.Is matches any error of
	// the same code.
	switch err {
	case errSignInExpired:
		reason = "This sign-in link has expired: links work for a short time only."
	case errSignInInvalid:
		reason = "This sign-in link was already used, or it is not a link this platform made. Each link works once."
	default:
		if e := mesh.AsError(err); e.Code == mesh.CodeInternal {
			g.log.Error().Ctx(r.Context()).Err(err).Msg("sign-in failed")
		} else {
			reason = e.Message
		}
	}
	pages.SignInFailed(w, http.StatusUnauthorized, reason)
}

// sessionInfo is what GET /web/session tells the page.
type sessionInfo struct {
	// CSRFToken goes in the X-CSRF-Token header of every state-changing
	// request made with the session cookie.
	CSRFToken string     `json:"csrf_token,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// APIBase is the platform's public URL, for connection instructions.
	APIBase string `json:"api_base"`
	// EventTypes are the event types, without their common prefix, that
	// webhooks and consumers may filter on.
	EventTypes []string `json:"event_types"`
}

func (g *Gateway) sessionInfo(w http.ResponseWriter, r *http.Request) {
	info := sessionInfo{APIBase: g.publicURL}
	for _, e := range mesh.EventCatalog {
		info.EventTypes = append(info.EventTypes, strings.TrimPrefix(e.Type, mesh.EventTypePrefix))
	}
	if s := sessionOf(r); s != nil {
		info.CSRFToken = csrfToken(s.id)
		info.ExpiresAt = &s.rec.ExpiresAt
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, info)
}

func (g *Gateway) signOut(w http.ResponseWriter, r *http.Request) {
	if s := sessionOf(r); s != nil {
		if err := g.sessions.end(r.Context(), s.id); err != nil {
			g.writeError(w, r, err)
			return
		}
	}
	c := g.sessionCookie("", time.Unix(0, 0))
	c.MaxAge = -1
	http.SetCookie(w, c)
	w.WriteHeader(http.StatusNoContent)
}

func (g *Gateway) sessionCookie(value string, expires time.Time) *http.Cookie {
	name := SessionCookie
	if g.secureCookies {
		name = SecureSessionCookie
	}
	return &http.Cookie{
		Name: name, Value: value, Path: "/", Expires: expires,
		HttpOnly: true, Secure: g.secureCookies, SameSite: http.SameSiteStrictMode,
	}
}

// signedIn is the session a people request came with.
type signedIn struct {
	id  string
	rec *webSession
}

type sessionKey struct{}

func sessionOf(r *http.Request) *signedIn {
	s, _ := r.Context().Value(sessionKey{}).(*signedIn)
	return s
}

// checkSession admits a people request made with a session cookie. Requests
// that change something must also carry the session's CSRF token and come
// from the platform's own origin.
func (g *Gateway) checkSession(r *http.Request, id string) (*http.Request, error) {
	rec, err := g.sessions.lookup(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if !safeMethod(r.Method) {
		if err := g.crossOrigin.Check(r); err != nil {
			return nil, mesh.Errorf(mesh.CodeForbidden, "cross-origin request refused")
		}
		token := r.Header.Get(HeaderCSRFToken)
		if token == "" || !secret.Equal(token, csrfToken(id)) {
			return nil, mesh.Errorf(mesh.CodeForbidden, "missing or wrong %s header: reload the page and try again", HeaderCSRFToken)
		}
	}
	return r.WithContext(context.WithValue(r.Context(), sessionKey{}, &signedIn{id: id, rec: rec})), nil
}

// sessionCookieValue returns the request's session cookie, if any.
func (g *Gateway) sessionCookieValue(r *http.Request) string {
	name := SessionCookie
	if g.secureCookies {
		name = SecureSessionCookie
	}
	c, err := r.Cookie(name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(c.Value)
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

func seeOther(w http.ResponseWriter, location string) {
	w.Header().Set("Location", location)
	w.WriteHeader(http.StatusSeeOther)
}

// usePublicURL settles the public URL (default: the listen address) and
// what follows from it: Secure cookies on https, and the origin trusted for
// state-changing requests made with a session.
func (g *Gateway) usePublicURL() error {
	g.publicURL = strings.TrimRight(g.cfg.PublicURL, "/")
	if g.publicURL == "" {
		g.publicURL = "http://" + g.ln.Addr().String()
	}
	u, err := url.Parse(g.publicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("gateway: public URL %q is not an http(s) URL", g.cfg.PublicURL)
	}
	g.secureCookies = u.Scheme == "https"
	g.crossOrigin = http.NewCrossOriginProtection()
	if err := g.crossOrigin.AddTrustedOrigin(u.Scheme + "://" + u.Host); err != nil {
		return fmt.Errorf("gateway: public URL: %w", err)
	}
	return nil
}
