package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// TestUp_MonitorListenServesTheNATSServersMonitoring: `up --monitor-listen`
// serves the embedded NATS server's HTTP monitoring (/varz, /jsz, /connz),
// which the NATS exporters scrape; without it the process listens on the
// HTTP API and NATS only.
func TestUp_MonitorListenServesTheNATSServersMonitoring(t *testing.T) {
	t.Parallel()
	l := newLab(t)

	plain := l.startPlatform(platformOptions{})
	if socks := listening(socketsOf(t, plain.proc.pid())); len(socks) != 2 {
		t.Fatalf("without --monitor-listen the platform listens on %d sockets, want 2 (HTTP, NATS): %+v", len(socks), socks)
	}

	monitor := meshtest.FreeAddr(t)
	p := l.start("platform", nil, bins.Platform, "up", "--data-dir", t.TempDir(), "--http", meshtest.FreeAddr(t),
		"--nats-listen", meshtest.FreeAddr(t), "--monitor-listen", monitor)
	p.waitOutput(t, `"message":"platform ready"`, waitStart)
	if socks := listening(socketsOf(t, p.pid())); len(socks) != 3 {
		t.Fatalf("with --monitor-listen the platform listens on %d sockets, want 3 (HTTP, NATS, monitoring): %+v", len(socks), socks)
	}
	for _, path := range []string{"/varz", "/jsz", "/connz"} {
		body := getJSON(t, "http://"+monitor+path)
		switch path {
		case "/varz":
			if body["server_name"] != "a2a-mesh" {
				t.Errorf("/varz server_name %v, want a2a-mesh", body["server_name"])
			}
		case "/jsz":
			if _, ok := body["streams"]; !ok {
				t.Errorf("/jsz has no stream count: %v", body)
			}
		case "/connz":
			if n, _ := body["num_connections"].(float64); n < 1 {
				t.Errorf("/connz counts %v connections, want the services' own", body["num_connections"])
			}
		}
	}
}

// getJSON fetches url, which must answer 200 with a JSON object.
func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, raw)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("GET %s: not JSON: %v: %.200s", url, err, raw)
	}
	return body
}
