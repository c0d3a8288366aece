package edge

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/internal/testkit/natsserver"
)

// A site's leaf node connects with the URL form deploy/nats/leaf.conf
// documents, nats-leaf://runtime:<runtime token>@host: the platform admits
// it, and once the runtime is revoked the platform's NATS server refuses
// every reconnect of the leaf and logs it without the token, as the leaf
// logs its remote without it.
func TestLeaf_RuntimeTokenStaysOutOfTheLogsOfRefusedReconnects(t *testing.T) {
	t.Parallel()
	hub := meshtest.StartSingleServer(t, meshtest.SingleServerOptions{
		Root: filepath.Join("..", ".."), Program: bins.Platform, ServeArgs: []string{"--log-level", "info"},
	})
	p, procs, monitor, leafListen := hub.Platform, hub.Procs, hub.MonitorAddr, hub.LeafAddr
	agent := p.CreateAgent("at a site")
	att := p.Attach(agent.ID)
	procs.Secret(att.RuntimeToken)

	site, siteMonitor := meshtest.FreeAddr(t), meshtest.FreeAddr(t)
	leaf := natsserver.Start(t, filepath.Join("..", "..", "deploy", "nats", "leaf.conf"), map[string]string{
		"MESH_LEAF_LISTEN":  site,
		"MESH_LEAF_HUB_URL": "nats-leaf://runtime:" + att.RuntimeToken + "@" + leafListen,
		"MESH_LEAF_MONITOR": siteMonitor,
	}, site)
	// The site's own health check (docs/operations.md): its leaf's
	// monitoring port lists the connection to the platform.
	meshtest.Eventually(t, 30*time.Second, func() bool { return meshtest.LeafCount(monitor) == 1 && meshtest.LeafCount(siteMonitor) == 1 }, func() string {
		return fmt.Sprintf("the platform never admitted the leaf (the platform lists %d leaf connections, the site %d):\n%s",
			meshtest.LeafCount(monitor), meshtest.LeafCount(siteMonitor), procs.Mask(hub.NATS.Logs()+leaf.Logs()))
	})

	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + att.RuntimeID + "/revoke", Owner: true}).
		Expect(t, http.StatusOK)
	// The leaf retries every second; two refusals show it kept trying.
	meshtest.Eventually(t, 30*time.Second, func() bool { return strings.Count(hub.NATS.Logs(), "authentication error") >= 2 }, func() string {
		return "the platform's server never refused the revoked leaf twice:\n" + procs.Mask(hub.NATS.Logs())
	})
	meshtest.Eventually(t, 30*time.Second, func() bool { return meshtest.LeafCount(siteMonitor) == 0 }, func() string {
		return fmt.Sprintf("the site's leaf lists %d connections to the platform after it was refused; want 0", meshtest.LeafCount(siteMonitor))
	})
	for _, line := range strings.Split(hub.NATS.Logs(), "\n") {
		if strings.Contains(line, "authentication error") && !strings.Contains(line, `"runtime"`) {
			t.Errorf("a refusal does not name the user runtime: %s", procs.Mask(line))
		}
	}
	for name, logs := range map[string]string{"the platform's NATS server": hub.NATS.Logs(), "the leaf": leaf.Logs()} {
		if strings.Contains(logs, att.RuntimeToken) {
			t.Errorf("%s logged the runtime token:\n%s", name, procs.Mask(logs))
		}
	}
}
