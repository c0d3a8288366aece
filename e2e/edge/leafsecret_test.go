package edge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/meshtest"
	"github.com/a2amesh/a2amesh/internal/natsserver"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/nats-io/nkeys"
)

// A site's leaf node connects with the URL form deploy/nats/leaf.conf
// documents, nats-leaf://runtime:<runtime token>@host: the platform admits
// it, and once the runtime is revoked the platform's NATS server refuses
// every reconnect of the leaf and logs it without the token, as the leaf
// logs its remote without it.
func TestLeaf_RuntimeTokenStaysOutOfTheLogsOfRefusedReconnects(t *testing.T) {
	t.Parallel()
	hub, monitor, leafListen, p, procs := startHub(t)
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
	meshtest.Eventually(t, 30*time.Second, func() bool { return leafCount(monitor) == 1 && leafCount(siteMonitor) == 1 }, func() string {
		return fmt.Sprintf("the platform never admitted the leaf (the platform lists %d leaf connections, the site %d):\n%s",
			leafCount(monitor), leafCount(siteMonitor), procs.Mask(hub.Logs()+leaf.Logs()))
	})

	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + att.RuntimeID + "/revoke", Owner: true}).
		Expect(t, http.StatusOK)
	// The leaf retries every second; two refusals show it kept trying.
	meshtest.Eventually(t, 30*time.Second, func() bool { return strings.Count(hub.Logs(), "authentication error") >= 2 }, func() string {
		return "the platform's server never refused the revoked leaf twice:\n" + procs.Mask(hub.Logs())
	})
	meshtest.Eventually(t, 30*time.Second, func() bool { return leafCount(siteMonitor) == 0 }, func() string {
		return fmt.Sprintf("the site's leaf lists %d connections to the platform after it was refused; want 0", leafCount(siteMonitor))
	})
	for _, line := range strings.Split(hub.Logs(), "\n") {
		if strings.Contains(line, "authentication error") && !strings.Contains(line, `"runtime"`) {
			t.Errorf("a refusal does not name the user runtime: %s", procs.Mask(line))
		}
	}
	for name, logs := range map[string]string{"the platform's NATS server": hub.Logs(), "the leaf": leaf.Logs()} {
		if strings.Contains(logs, att.RuntimeToken) {
			t.Errorf("%s logged the runtime token:\n%s", name, procs.Mask(logs))
		}
	}
}

// startHub runs the platform as an operator does on one server:
// nats-server with deploy/nats/single.conf as shipped, leaf nodes on, and
// every service as an `a2a-platform serve` process. It returns the server,
// its monitoring address and leaf listen address, the API, and the
// processes.
func startHub(t *testing.T) (*natsserver.Process, string, string, *meshtest.Platform, *meshtest.Procs) {
	t.Helper()
	dir := t.TempDir()
	issuer, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	issuerPub, _ := issuer.PublicKey()
	issuerSeed, _ := issuer.Seed()
	password := secret.NewToken("pw_")
	owner := secret.NewToken(secret.PrefixOwner)
	procs := meshtest.NewProcs(t)
	procs.Secret(password, owner, string(issuerSeed))
	for name, content := range map[string]string{"issuer.nk": string(issuerSeed), "owner.token": owner + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	natsAddr, leafAddr, monitorAddr := meshtest.FreeAddr(t), meshtest.FreeAddr(t), meshtest.FreeAddr(t)
	hub := natsserver.Start(t, filepath.Join("..", "..", "deploy", "nats", "single.conf"), map[string]string{
		"MESH_SERVICE_PASSWORD": password,
		"MESH_AUTH_ISSUER":      issuerPub,
		"MESH_NATS_LISTEN":      natsAddr,
		"MESH_NATS_WS_LISTEN":   meshtest.FreeAddr(t),
		"MESH_NATS_MONITOR":     monitorAddr,
		"MESH_NATS_STORE":       filepath.Join(dir, "nats"),
		"MESH_NATS_LEAF_LISTEN": leafAddr,
	}, natsAddr)
	httpAddr := meshtest.FreeAddr(t)
	for _, svc := range platform.Services {
		args := []string{"serve", svc, "--data-dir", dir, "--nats-url", "nats://" + natsAddr, "--log-level", "info"}
		switch svc {
		case "credentials":
			args = append(args, "--auth-issuer-seed-file", filepath.Join(dir, "issuer.nk"), "--nats-advertise", "nats://"+natsAddr)
		case "gateway":
			args = append(args, "--owner-token-file", filepath.Join(dir, "owner.token"), "--http", httpAddr)
		}
		procs.Start(svc, []string{"A2A_MESH_NATS_PASSWORD=" + password}, bins.Platform, args...)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, pr := range procs.All() {
				t.Logf("---- %s ----\n%s", pr.Name, meshtest.Tail(procs.Mask(pr.Logs.String()), 3000))
			}
		}
	})
	base := "http://" + httpAddr
	meshtest.WaitReady(t, base, 60*time.Second, &meshtest.Logs{})
	procs.WaitLogged(60*time.Second, "service ready")
	return hub, monitorAddr, leafAddr, meshtest.Remote(t, base, owner), procs
}

// leafCount is how many leaf nodes the server at monitor has.
func leafCount(monitor string) int {
	resp, err := http.Get("http://" + monitor + "/leafz")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var leafz struct {
		Leafs int `json:"leafnodes"`
	}
	if json.NewDecoder(resp.Body).Decode(&leafz) != nil {
		return -1
	}
	return leafz.Leafs
}
