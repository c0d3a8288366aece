package cluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// TestServe_HealthAnswersFromTheStartWhileWaitingForNATSAndJetStream: a
// serve process started before any node of its cluster answers /healthz
// with 200 and /readyz with 503 saying it waits for NATS; with one node of
// three up (no JetStream quorum), that it waits for JetStream; once the
// cluster has formed, /readyz answers 200.
func TestServe_HealthAnswersFromTheStartWhileWaitingForNATSAndJetStream(t *testing.T) {
	d := newNodes(t)
	health := meshtest.FreeAddr(t)
	proc := d.procs.Start("agents", []string{"A2A_MESH_NATS_PASSWORD=" + d.password}, bins.Platform,
		"serve", "agents", "--data-dir", filepath.Join(d.dir, "agents"), "--nats-url", d.urls(), "--replicas", "3",
		"--log-level", "info", "--metrics-listen", health)

	waitProbes := func(phase string, ready int, waitingFor string) {
		t.Helper()
		var live, status int
		var got struct {
			Ready      bool              `json:"ready"`
			WaitingFor string            `json:"waiting_for"`
			Checks     map[string]string `json:"checks"`
		}
		meshtest.Eventually(t, 60*time.Second, func() bool {
			if proc.Exited() {
				t.Fatalf("serve agents exited %s:\n%s", phase, d.procs.Mask(proc.Logs.String()))
			}
			live = get(health, "/healthz", nil)
			got.Ready, got.WaitingFor, got.Checks = false, "", nil
			status = get(health, "/readyz", &got)
			return live == http.StatusOK && status == ready && got.WaitingFor == waitingFor &&
				got.Ready == (ready == http.StatusOK) && len(got.Checks) > 0
		}, func() string {
			return fmt.Sprintf("%s: /healthz %d, /readyz %d %+v; want /healthz 200 and /readyz %d waiting for %q\n%s",
				phase, live, status, got, ready, waitingFor, d.procs.Mask(proc.Logs.String()))
		})
	}
	waitProbes("before any node runs", http.StatusServiceUnavailable, "nats")
	d.startNode(0)
	waitProbes("with one node of three", http.StatusServiceUnavailable, "jetstream")
	d.startNode(1)
	d.startNode(2)
	waitProbes("once the cluster has formed", http.StatusOK, "")
}

// get asks addr for path and decodes a JSON answer into v (when not nil);
// it returns the status, 0 when nothing answered.
func get(addr, path string, v any) int {
	client := http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if v != nil {
		_ = json.NewDecoder(resp.Body).Decode(v)
	}
	return resp.StatusCode
}
