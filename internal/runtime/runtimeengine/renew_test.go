package runtimeengine_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestHTTPTransport_ARenewalThePlatformCannotAnswerLosesNoRunAndRenewsTheRest:
// the REST renewal renews one run per request. One the platform cannot
// answer now (503: its store is electing a leader) names no run lost, so
// the engine keeps working on it and tries again, and does not keep the
// runs after it from being renewed in the same round.
func TestHTTPTransport_ARenewalThePlatformCannotAnswerLosesNoRunAndRenewsTheRest(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, longLeases)
	agent := p.CreateAgent("renewed through a refusal")
	att := p.OnlineRuntime(t, agent.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first, second := p.CreateTask(agent.ID, "unanswered renewal"), p.CreateTask(agent.ID, "renewed")
	res, err := p.RuntimeClient(t, att).Offer(ctx, meshapi.OfferRequest{Wait: 5 * time.Second, Max: 2, Claim: true, Key: mesh.NewID()})
	if err != nil || len(res.Claimed) != 2 {
		t.Fatalf("claim of both runs: %+v, %v", res, err)
	}

	// The platform's REST API, except that the first run's renewal is
	// answered as a platform whose store is unavailable answers it.
	base, err := url.Parse(p.APIBase)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: base.Scheme, Host: base.Host})
	unanswered := "/task-runs/" + first.ID + "/renew"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, unanswered) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"code":"UNAVAILABLE","message":"the runs' store is unavailable; retry"}}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	// Closed after the transport (cleanups run last first), whose stream of
	// cancels it would otherwise wait for.
	t.Cleanup(srv.Close)
	tr := dialHTTP(t, srv.URL+base.Path, att)

	before := p.GetTask(second.ID).LeaseExpiresAt
	lost, err := tr.Renew(ctx, []string{first.ID, second.ID})
	if len(lost) != 0 {
		t.Fatalf("the renewal named %v lost; want none (a 503 says nothing of who holds a run)", lost)
	}
	var e *mesh.Error
	if !errors.As(err, &e) || e.Code != mesh.CodeUnavailable {
		t.Fatalf("the renewal answered %v; want the platform's UNAVAILABLE, so the engine tries again soon", err)
	}
	after := p.GetTask(second.ID).LeaseExpiresAt
	if before == nil || after == nil || !after.After(*before) {
		t.Fatalf("the second run's lease went from %v to %v; want it renewed in the same round", before, after)
	}
}
