package runtimeengine

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestStatus_ServesMetricsAndHealthOnlyWhereAsked: the status port serves
// the runtime's metrics and its health on the address it is given.
func TestStatus_ServesMetricsAndHealthOnlyWhereAsked(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, nil)
	m.taskStarted()
	m.taskStarted()
	m.taskEnded(true)
	m.taskEnded(false)
	m.adapterCall(120 * time.Millisecond)
	m.heartbeatFailed()
	var none *Metrics
	none.taskStarted() // a runtime without a status port records nothing, and does not fail
	s, err := ServeStatus("127.0.0.1:0", reg, func() []byte { return []byte(`{"ok":true}`) })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	get := func(path string) (string, string) {
		resp, err := http.Get("http://" + s.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d", path, resp.StatusCode)
		}
		return string(b), resp.Header.Get("Content-Type")
	}
	body, _ := get("/metrics")
	for _, line := range []string{
		`a2amesh_runtime_tasks_total{outcome="started"} 2`,
		`a2amesh_runtime_tasks_total{outcome="completed"} 1`,
		`a2amesh_runtime_tasks_total{outcome="failed"} 1`,
		`a2amesh_runtime_adapter_call_seconds_count 1`,
		`a2amesh_runtime_heartbeat_failures_total 1`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("metrics lack %q", line)
		}
	}
	health, ct := get("/healthz")
	var h map[string]any
	if err := json.Unmarshal([]byte(health), &h); err != nil || h["ok"] != true || ct != "application/json" {
		t.Fatalf("healthz: %s (%s)", health, ct)
	}
}
