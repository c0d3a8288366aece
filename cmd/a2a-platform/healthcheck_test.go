package main_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// TestHealthcheck_ExitsZeroOnlyWhenThePlatformAnswersHealthy: the image's
// HEALTHCHECK (distroless has no curl) runs `a2a-platform healthcheck`,
// which exits 0 when the URL answers 200 and 1 with the reason on stderr
// when it answers otherwise or not at all.
func TestHealthcheck_ExitsZeroOnlyWhenThePlatformAnswersHealthy(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	if r := run(t, nil, bins.Platform, "healthcheck", "--url", p.APIBase+"/healthz"); r.code != 0 || r.stdout != "" {
		t.Fatalf("healthcheck of a running platform: %s", r)
	}
	// The variable of --url, as a container's environment would set it.
	if r := run(t, []string{"A2A_MESH_URL=" + p.APIBase + "/readyz"}, bins.Platform, "healthcheck"); r.code != 0 {
		t.Fatalf("healthcheck of a ready platform by A2A_MESH_URL: %s", r)
	}

	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	closed := "http://" + meshtest.FreeAddr(t) + "/healthz"
	for _, tc := range []struct{ url, says string }{
		{failing.URL + "/healthz", "503"},
		{closed, "connect"},
		{p.APIBase + "/no-such-route", "404"},
	} {
		r := run(t, nil, bins.Platform, "healthcheck", "--url", tc.url, "--timeout", "2s")
		if r.code != 1 || !strings.Contains(r.stderr, tc.says) {
			t.Errorf("healthcheck of %s: %s; want exit 1 saying %q", tc.url, r, tc.says)
		}
	}
}
