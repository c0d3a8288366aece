package trust_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/meshtest"
	"github.com/a2amesh/a2amesh/internal/natsserver"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// deployment is the platform as an operator runs it: nats-server with
// deploy/nats/single.conf as shipped, and each service as its own
// `a2a-platform serve` process.
type deployment struct {
	p    *meshtest.Platform
	conn *bus.Conn
	logs *meshtest.Logs
	// leafAddr is where leaf nodes of sites connect; monitorAddr is the
	// server's monitoring endpoint.
	leafAddr, monitorAddr string
}

func startDeployment(t *testing.T) *deployment {
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
	for name, content := range map[string]string{"issuer.nk": string(issuerSeed), "owner.token": owner + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	natsAddr, leafAddr, monitorAddr := meshtest.FreeAddr(t), meshtest.FreeAddr(t), meshtest.FreeAddr(t)
	natsserver.Start(t, filepath.Join("..", "..", "deploy", "nats", "single.conf"), map[string]string{
		"MESH_SERVICE_PASSWORD": password,
		"MESH_AUTH_ISSUER":      issuerPub,
		"MESH_NATS_LISTEN":      natsAddr,
		"MESH_NATS_WS_LISTEN":   meshtest.FreeAddr(t),
		"MESH_NATS_MONITOR":     monitorAddr,
		"MESH_NATS_STORE":       filepath.Join(dir, "nats"),
		"MESH_NATS_LEAF_LISTEN": leafAddr,
	}, natsAddr)
	natsURL := "nats://" + natsAddr

	bin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-platform")
	logs := &meshtest.Logs{}
	httpAddr := meshtest.FreeAddr(t)
	for _, svc := range platform.Services {
		args := []string{"serve", svc, "--data-dir", dir, "--nats-url", natsURL, "--log-level", "debug",
			"--lease", "2s", "--heartbeat-timeout", "3s"}
		switch svc {
		case bus.ServiceCredentials:
			args = append(args, "--auth-issuer-seed-file", filepath.Join(dir, "issuer.nk"), "--nats-advertise", natsURL)
		case bus.ServiceGateway:
			args = append(args, "--owner-token-file", filepath.Join(dir, "owner.token"), "--http", httpAddr)
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "A2A_MESH_NATS_PASSWORD="+password)
		meshtest.StartCommand(t, cmd, logs)
	}
	base := "http://" + httpAddr
	meshtest.WaitReady(t, base, 60*time.Second, logs)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.ConnConfig{URL: natsURL, User: "mesh-service", Password: password, Name: "trust test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.NC.Close() })
	meshtest.WaitServices(t, conn.NC, 60*time.Second, logs, platform.BusServices...)
	p := meshtest.Remote(t, base, owner)
	p.Logs = logs
	return &deployment{p: p, conn: conn, logs: logs, leafAddr: leafAddr, monitorAddr: monitorAddr}
}

// TestAttack_ServeDeploymentHoldsAgainstEveryCredential runs the attacks
// against nats-server with the shipped configuration and `serve` processes.
func TestAttack_ServeDeploymentHoldsAgainstEveryCredential(t *testing.T) {
	t.Parallel()
	d := startDeployment(t)
	w := newWorldOn(t, d.p, d.conn)
	attackAsRuntime(t, w)
	attackAsConsumer(t, w)
	attackThroughALeaf(t, w, d)
	consumerLeafRefused(t, d)
	for _, how := range []string{"revoked", "replaced"} {
		agent := d.p.CreateAgent(how)
		att := d.p.Attach(agent.ID)
		kickedWithin(t, how, att, func() { endCredential(t, d.p, how, agent.ID, att.RuntimeID) })
	}
	meshtest.AssertNoSecrets(t, nil, map[string]string{"logs": d.logs.String()})
}

// attackThroughALeaf runs a site's leaf node (deploy/nats/leaf.conf as
// shipped) with a runtime's credential, and attacks from a connection that
// the leaf lets in without any credential of its own.
func attackThroughALeaf(t *testing.T, w *world, d *deployment) {
	p := w.p
	agentA := p.CreateAgent("site")
	rtA := p.Attach(agentA.ID)
	siteAddr := meshtest.FreeAddr(t)
	leaf := natsserver.Start(t, filepath.Join("..", "..", "deploy", "nats", "leaf.conf"), map[string]string{
		"MESH_LEAF_LISTEN":  siteAddr,
		"MESH_LEAF_HUB_URL": "nats-leaf://runtime:" + rtA.RuntimeToken + "@" + d.leafAddr,
		"MESH_LEAF_MONITOR": meshtest.FreeAddr(t),
	}, siteAddr)
	nc, err := nats.Connect("nats://"+siteAddr, nats.CustomInboxPrefix(rtA.NATS.InboxPrefix))
	if err != nil {
		t.Fatalf("the site's leaf: %v", err)
	}
	defer nc.Close()
	rc := meshapi.NewClient(nc).Runtime(agentA.ID, rtA.RuntimeID)
	// The runtime's work passes through the leaf once it has joined the hub.
	meshtest.Eventually(t, 20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := rc.Hello(ctx)
		return err == nil
	}, func() string { return "hello through the leaf never answered:\n" + leaf.Logs() })

	// No agent's events cross the leaf: a runtime hears only answers to
	// its own requests.
	spy := listen(t, nc, bus.AgentEventsFilter(w.victim.ID), bus.AgentEventsFilter(agentA.ID))
	p.CreateTask(w.victim.ID, "victim's work while the leaf listens")
	p.CreateTask(agentA.ID, "the site's work")
	hctx, hcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer hcancel()
	if _, err := rc.Hello(hctx); err != nil {
		t.Fatalf("hello through the leaf: %v", err)
	}
	if m := spy.foreign(t, func(*nats.Msg) bool { return false }); m != nil {
		t.Fatalf("the leaf read an event %s", m.Subject)
	}
	if _, err := nc.Request(bus.ServiceSubject(bus.ServiceAgents, meshapi.OpAgentList), []byte(`{}`), time.Second); err == nil {
		t.Fatal("a service answered through the leaf")
	}
	a := runtimeAttacker(nc, agentA.ID, rtA.RuntimeID)
	attackAll(t, w, a, func() { p.CreateTask(agentA.ID, "bait") })

	// Revoking the runtime whose credential the leaf holds closes the
	// leaf's connection to the platform within a second.
	if n := d.leafCount(t); n != 1 {
		t.Fatalf("%d leaf nodes connected, want the site's", n)
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + rtA.RuntimeID + "/revoke", Owner: true}).Expect(t, http.StatusOK)
	revoked := time.Now()
	meshtest.Eventually(t, 5*time.Second, func() bool { return d.leafCount(t) == 0 }, func() string { return "the revoked runtime's leaf is still connected" })
	if took := time.Since(revoked); took > time.Second {
		t.Fatalf("the revoked runtime's leaf was closed %s after revocation, want within a second", took)
	}
}

// leafCount is how many leaf nodes the platform's server has.
func (d *deployment) leafCount(t *testing.T) int {
	t.Helper()
	resp, err := http.Get("http://" + d.monitorAddr + "/leafz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var leafz struct {
		Leafs int `json:"leafnodes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&leafz); err != nil {
		t.Fatal(err)
	}
	return leafz.Leafs
}
