package trust_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/internal/testkit/natsserver"
)

// consumerLeafRefused runs a hand-written site: a leaf node whose remote
// presents an event consumer credential. The platform's server refuses it:
// the server does not hold a leaf connection to the permissions it holds a
// client to (a leaf may acknowledge another durable's messages), and sites
// connect runtimes, not consumers.
func consumerLeafRefused(t *testing.T, d *deployment) {
	agent := d.p.CreateAgent("watched from a site")
	con := createConsumer(t, d.p, "leaf spy", agent.ID)
	siteAddr := meshtest.FreeAddr(t)
	for _, remote := range []string{
		"nats-leaf://" + con.Credential + "@" + d.LeafAddr,
		"nats-leaf://" + con.LiveUser + ":" + con.Credential + "@" + d.LeafAddr,
	} {
		leaf := natsserver.Start(t, filepath.Join("..", "..", "deploy", "nats", "leaf.conf"), map[string]string{
			"MESH_LEAF_LISTEN":  siteAddr,
			"MESH_LEAF_HUB_URL": remote,
			"MESH_LEAF_MONITOR": meshtest.FreeAddr(t),
		}, siteAddr)
		meshtest.Eventually(t, 20*time.Second, func() bool { return strings.Contains(d.Output()+leaf.Logs(), "cannot connect a leaf node") },
			func() string { return "the consumer's leaf was never refused:\n" + leaf.Logs() })
		if n := d.LeafCount(); n != 0 {
			t.Fatalf("%d leaf nodes connected with a consumer credential, want none", n)
		}
		leaf.Stop()
	}
	d.p.Send(t, meshtest.Request{Method: http.MethodDelete, Path: "/consumers/" + con.ConsumerID, Owner: true}).Expect(t, http.StatusNoContent)
}
