package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/meshtest"
	"github.com/a2amesh/a2amesh/internal/natsserver"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// TestRegionConf_ThreeRegionsJoinWithTheShippedConfiguration runs
// deploy/nats/region.conf as shipped for three regions of one node each
// (each node's three routes its own address): the gateways join every
// region to every other, JetStream answers, the services' user of the
// shipped accounts connects in each region, and a bucket placed in one
// region is stored there and read from another.
func TestRegionConf_ThreeRegionsJoinWithTheShippedConfiguration(t *testing.T) {
	regions := []string{"east", "west", "south"}
	issuer, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	issuerPub, _ := issuer.PublicKey()
	password := secret.NewToken("pw_")
	gateways := map[string]string{}
	for _, r := range regions {
		gateways[r] = meshtest.FreeAddr(t)
	}
	client, monitor := map[string]string{}, map[string]string{}
	for _, r := range regions {
		route := meshtest.FreeAddr(t)
		client[r], monitor[r] = meshtest.FreeAddr(t), meshtest.FreeAddr(t)
		env := map[string]string{
			"MESH_SERVICE_PASSWORD": password, "MESH_AUTH_ISSUER": issuerPub,
			"MESH_REGION": r, "MESH_NODE_NAME": r + "-n1",
			"MESH_NATS_LISTEN": client[r], "MESH_NATS_WS_LISTEN": meshtest.FreeAddr(t), "MESH_NATS_MONITOR": monitor[r],
			"MESH_NATS_STORE": t.TempDir(), "MESH_NATS_LEAF_LISTEN": meshtest.FreeAddr(t),
			"MESH_NATS_CLUSTER_LISTEN": route, "MESH_NATS_GATEWAY_LISTEN": gateways[r],
		}
		for i := range 3 {
			env[fmt.Sprintf("MESH_NATS_ROUTE_%d", i+1)] = "nats-route://" + route
		}
		for i, g := range regions {
			env[fmt.Sprintf("MESH_GATEWAY_%d_NAME", i+1)] = g
			env[fmt.Sprintf("MESH_GATEWAY_%d_URL", i+1)] = "nats://" + gateways[g]
		}
		natsserver.Start(t, filepath.Join("..", "..", "deploy", "nats", "region.conf"), env, client[r])
	}
	meshtest.Eventually(t, 60*time.Second, func() bool {
		for _, r := range regions {
			var gz struct {
				Name     string `json:"name"`
				Outbound map[string]struct {
					Connection *struct{} `json:"connection"`
				} `json:"outbound_gateways"`
			}
			if !getJSON(monitor[r], "/gatewayz", &gz) || gz.Name != r {
				return false
			}
			for _, o := range regions {
				if o != r && gz.Outbound[o].Connection == nil {
					return false
				}
			}
			if !natsserver.Healthy(monitor[r]) {
				return false
			}
		}
		return true
	}, func() string { return "the three regions never joined with JetStream healthy" })

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(r string) jetstream.JetStream {
		conn, err := bus.Connect(ctx, bus.ConnConfig{URL: "nats://" + client[r], User: "mesh-service", Password: password, Name: "region test"})
		if err != nil {
			t.Fatalf("services' user in %s: %v", r, err)
		}
		t.Cleanup(func() { conn.NC.Close() })
		return conn.JS
	}
	west := connect("west")
	var kv jetstream.KeyValue
	meshtest.Eventually(t, 30*time.Second, func() bool {
		kv, err = west.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "placed_in_west", Placement: &jetstream.Placement{Cluster: "west"}})
		return err == nil
	}, func() string { return fmt.Sprintf("a bucket placed in west was never created: %v", err) })
	if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	fromEast, err := connect("east").KeyValue(ctx, "placed_in_west")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := fromEast.Get(ctx, "k"); err != nil || string(e.Value()) != "v" {
		t.Fatalf("west's bucket read from east: %v %v", e, err)
	}
	info, err := west.Stream(ctx, "KV_placed_in_west")
	if err != nil {
		t.Fatal(err)
	}
	if c := info.CachedInfo().Cluster; c == nil || c.Name != "west" {
		t.Fatalf("the bucket placed in west is in %+v", c)
	}
}

func getJSON(addr, path string, v any) bool {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}
