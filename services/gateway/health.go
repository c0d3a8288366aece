package gateway

import (
	"context"
	"net/http"
	"time"

	"github.com/a2amesh/a2amesh/bus"
)

// readyTimeout bounds a readiness check: shorter than a probe's own timeout
// (3 s in the Helm chart), so a probe always gets an answer.
const readyTimeout = 2 * time.Second

// healthz says the process is alive.
func (g *Gateway) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// readyz says whether this process can serve its own region.
func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	status, body := Readiness(r.Context(), g.cfg.Conn)
	writeJSON(w, status, body)
}

// Readiness is the answer of a platform process's /readyz: 200 while NATS
// is connected and every stream of this process's region answers, 503
// otherwise, with each check's outcome. Other regions that do not answer
// are listed in unreachable_regions (and what was found of each in
// degraded) without making the process unready: it serves its own region
// whatever happens elsewhere.
func Readiness(ctx context.Context, conn *bus.Conn) (int, map[string]any) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	checks := map[string]string{"nats": "ok", "jetstream": "ok"}
	ready := true
	if !conn.NC.IsConnected() {
		checks["nats"], ready = "disconnected", false
	}
	found := bus.CheckReady(ctx, conn.JS)
	if found.Err != nil {
		checks["jetstream"], ready = found.Err.Error(), false
	}
	body := map[string]any{"ready": ready, "checks": checks}
	if len(found.Unreachable) > 0 {
		body["unreachable_regions"] = found.UnreachableRegions()
		body["degraded"] = found.Unreachable
	}
	status := http.StatusOK
	if !ready {
		status = http.StatusServiceUnavailable
	}
	return status, body
}
