package platform_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/rs/zerolog"
)

func probe(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return res.StatusCode, body
}

// TestServe_WaitsForAClusterStillFormingAndAnswersProbes: a service started
// when only one of three NATS nodes is up waits (it does not exit), comes up
// when the others join, and answers /healthz and /readyz on its metrics
// address; /readyz turns 503 when its NATS is gone.
func TestServe_WaitsForAClusterStillFormingAndAnswersProbes(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, Deferred: true})
	c.Start(0)
	cfg := platform.ServeConfig{
		Config: platform.Config{
			DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", Replicas: 3,
			ShutdownGrace: time.Second, Logger: zerolog.Nop(),
		},
		Service:       "taskqueue",
		NATSURL:       c.URL(0),
		MetricsListen: "127.0.0.1:0",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := serveInBackground(ctx, cfg)
	// While the cluster has no quorum, Serve keeps waiting.
	select {
	case res := <-done:
		t.Fatalf("serve returned before the cluster formed: %v", res.err)
	case <-time.After(2 * time.Second):
	}
	c.Start(1)
	c.Start(2)
	res := <-done
	if res.err != nil {
		t.Fatalf("serve after the cluster formed: %v", res.err)
	}
	t.Cleanup(res.r.Stop)
	base := "http://" + res.r.MetricsAddr()
	if status, body := probe(t, base+"/healthz"); status != http.StatusOK || body["ok"] != true {
		t.Fatalf("/healthz: %d %v", status, body)
	}
	// The service serves the region its NATS cluster is named after.
	if status, body := probe(t, base+"/readyz"); status != http.StatusOK || body["ready"] != true || body["region"] != "clustertest" || res.r.Region() != "clustertest" {
		t.Fatalf("/readyz: %d %v; region %q", status, body, res.r.Region())
	}
	for i := range 3 {
		c.Stop(i)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, body := probe(t, base+"/readyz")
		if status == http.StatusServiceUnavailable && body["ready"] == false {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz with NATS gone: %d %v", status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if status, _ := probe(t, base+"/healthz"); status != http.StatusOK {
		t.Fatalf("/healthz with NATS gone: %d", status)
	}
}

// TestServe_WaitsForANATSServerNotStartedYet: a service started before any
// NATS server is up waits for it (one "waiting for NATS" line) and comes up
// when it starts, instead of exiting.
func TestServe_WaitsForANATSServerNotStartedYet(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, Deferred: true})
	logs := &meshtest.Logs{}
	cfg := platform.ServeConfig{
		Config: platform.Config{
			DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0",
			ShutdownGrace: time.Second, Logger: zerolog.New(logs),
		},
		Service: "agents",
		NATSURL: c.URL(0),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := serveInBackground(ctx, cfg)
	meshtest.Eventually(t, 20*time.Second, func() bool {
		select {
		case res := <-done:
			t.Fatalf("serve returned before NATS started: %v", res.err)
		default:
		}
		return strings.Contains(logs.String(), "waiting for NATS")
	}, func() string { return "no waiting line: " + logs.String() })
	c.Start(0)
	res := <-done
	if res.err != nil {
		t.Fatalf("serve once NATS started: %v", res.err)
	}
	res.r.Stop()
	if n := strings.Count(logs.String(), "waiting for NATS"); n != 1 {
		t.Fatalf("%d waiting lines, want one", n)
	}
}

// served is what platform.Serve returned.
type served struct {
	r   *platform.Running
	err error
}

// serveInBackground runs platform.Serve on its own goroutine: it returns
// only once the service is up (or has given up).
func serveInBackground(ctx context.Context, cfg platform.ServeConfig) <-chan served {
	done := make(chan served, 1)
	go func() {
		r, err := platform.Serve(ctx, cfg)
		done <- served{r, err}
	}()
	return done
}
