package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// ownerAuth checks the owner credential against the hash the platform stored
// in the settings, following changes (a rotated credential) by watching it.
type ownerAuth struct {
	mu      sync.RWMutex
	hash    string
	watcher jetstream.KeyWatcher
}

func newOwnerAuth(ctx context.Context, js jetstream.JetStream, log zerolog.Logger) (*ownerAuth, error) {
	// Through this region's copy of the settings: the gateway starts, and
	// checks the owner, while the origin region is down.
	w, err := bus.WatchSetting(ctx, js, bus.ConfigOwnerTokenHash)
	if err != nil {
		return nil, fmt.Errorf("gateway: watch owner credential: %w", err)
	}
	a := &ownerAuth{watcher: w}
	ready := make(chan struct{})
	go func() {
		once := sync.OnceFunc(func() { close(ready) })
		defer once()
		for e := range w.Updates() {
			if e == nil {
				once()
				continue
			}
			a.mu.Lock()
			a.hash = ""
			if e.Operation() == jetstream.KeyValuePut {
				a.hash = string(e.Value())
			}
			a.mu.Unlock()
		}
	}()
	select {
	case <-ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if a.current() == "" {
		log.Warn().Msg("no owner credential is configured; people-facing routes answer 401")
	}
	return a, nil
}

func (a *ownerAuth) current() string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.hash
}

func (a *ownerAuth) check(r *http.Request) error {
	token, ok := bearer(r)
	if !ok {
		return mesh.Errorf(mesh.CodeUnauthorized, "missing credential: send Authorization: Bearer <owner token>")
	}
	want := a.current()
	if want == "" || !secret.Equal(secret.Hash(token), want) {
		return mesh.Errorf(mesh.CodeUnauthorized, "invalid owner credential")
	}
	return nil
}

func (a *ownerAuth) stop() { _ = a.watcher.Stop() }

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// people registers a route for people: the owner credential, or a web
// sign-in session (see checkSession).
func (g *Gateway) people(mux *http.ServeMux, pattern string, h http.HandlerFunc) {
	g.routes = append(g.routes, pattern)
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		authed, err := g.checkPerson(r)
		if err != nil {
			g.writeError(w, r, err)
			return
		}
		h(w, authed)
	})
}

// checkPerson admits the owner credential or, when the request has no
// Authorization header, a sign-in session cookie.
func (g *Gateway) checkPerson(r *http.Request) (*http.Request, error) {
	if id := g.sessionCookieValue(r); id != "" && r.Header.Get("Authorization") == "" {
		return g.checkSession(r, id)
	}
	return r, g.owner.check(r)
}

// ownerOnly registers a route that needs the owner credential itself; a
// sign-in session is not enough.
func (g *Gateway) ownerOnly(mux *http.ServeMux, pattern string, h http.HandlerFunc) {
	g.routes = append(g.routes, pattern)
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if err := g.owner.check(r); err != nil {
			g.writeError(w, r, err)
			return
		}
		h(w, r)
	})
}

// HeaderRuntimeToken carries a runtime credential (seed 001).
const HeaderRuntimeToken = "X-Runtime-Token"

type runtimeKey struct{}

// runtime registers a route that needs a runtime credential; the handler finds
// the authenticated runtime with runtimeOf.
func (g *Gateway) runtime(mux *http.ServeMux, pattern string, h http.HandlerFunc) {
	g.routes = append(g.routes, pattern)
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		token := strings.TrimSpace(r.Header.Get(HeaderRuntimeToken))
		if token == "" {
			g.writeError(w, r, mesh.Errorf(mesh.CodeUnauthorized, "missing %s header", HeaderRuntimeToken))
			return
		}
		id, err := g.rtAuth.authenticate(r.Context(), token)
		if err != nil {
			g.writeError(w, r, err)
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), runtimeKey{}, id)))
	})
}

func runtimeOf(r *http.Request) *meshapi.Identity {
	id, _ := r.Context().Value(runtimeKey{}).(*meshapi.Identity)
	return id
}

// sameAgent refuses a runtime acting on another agent's path.
func sameAgent(id *meshapi.Identity, agentID string) error {
	if id.AgentID != agentID {
		return mesh.Errorf(mesh.CodeForbidden, "this runtime belongs to another agent")
	}
	return nil
}
