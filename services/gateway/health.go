package gateway

import (
	"context"
	"net/http"
	"time"

	"github.com/a2amesh/a2amesh/bus"
)

// healthz says the process is alive.
func (g *Gateway) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// readyz says whether NATS and JetStream are reachable and every stream is
// provisioned.
func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]string{"nats": "ok", "jetstream": "ok"}
	ready := true
	if !g.cfg.Conn.NC.IsConnected() {
		checks["nats"], ready = "disconnected", false
	}
	if err := bus.Provisioned(ctx, g.js); err != nil {
		checks["jetstream"], ready = err.Error(), false
	}
	status := http.StatusOK
	if !ready {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, map[string]any{"ready": ready, "checks": checks})
}
