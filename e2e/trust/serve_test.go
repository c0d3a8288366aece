package trust_test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/internal/testkit/natsserver"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
)

// deployment is the platform as an operator runs it: nats-server with
// deploy/nats/single.conf as shipped, and each service as its own
// `a2a-platform serve` process.
type deployment struct {
	*meshtest.SingleServer
	p    *meshtest.Platform
	conn *bus.Conn
}

func startDeployment(t *testing.T) *deployment {
	t.Helper()
	s := meshtest.StartSingleServer(t, meshtest.SingleServerOptions{
		Root: filepath.Join("..", ".."), Program: meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-platform"),
		ServeArgs: []string{"--log-level", "debug", "--lease", "2s", "--heartbeat-timeout", "3s"},
	})
	return &deployment{SingleServer: s, p: s.Platform, conn: s.Conn}
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
	meshtest.AssertNoSecrets(t, nil, map[string]string{"logs": d.Output()})
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
		"MESH_LEAF_HUB_URL": "nats-leaf://runtime:" + rtA.RuntimeToken + "@" + d.LeafAddr,
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
	if n := d.LeafCount(); n != 1 {
		t.Fatalf("%d leaf nodes connected, want the site's", n)
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + rtA.RuntimeID + "/revoke", Owner: true}).Expect(t, http.StatusOK)
	revoked := time.Now()
	meshtest.Eventually(t, 5*time.Second, func() bool { return d.LeafCount() == 0 }, func() string { return "the revoked runtime's leaf is still connected" })
	if took := time.Since(revoked); took > time.Second {
		t.Fatalf("the revoked runtime's leaf was closed %s after revocation, want within a second", took)
	}
}
