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
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/internal/testkit/natsserver"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// TestRegionConf_ThreeRegionsJoinWithTheShippedConfiguration runs the
// shipped configurations for a deployment of three regions: east of three
// nodes (deploy/nats/region.conf), west and south of one node each
// (deploy/nats/region-single.conf, routed to itself). Each node advertises
// its gateway address; the gateways join every region to every other,
// JetStream answers, the services' user of the shipped accounts connects in
// each region, and a bucket placed in one region is stored there and read
// from another.
func TestRegionConf_ThreeRegionsJoinWithTheShippedConfiguration(t *testing.T) {
	regions := []string{"east", "west", "south"}
	nodes := map[string]int{"east": 3, "west": 1, "south": 1}
	issuer, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	issuerPub, _ := issuer.PublicKey()
	password := secret.NewToken("pw_")
	// Each region's gateways are reached at its first node.
	gateways := map[string][]string{}
	for _, r := range regions {
		for range nodes[r] {
			gateways[r] = append(gateways[r], meshtest.FreeAddr(t))
		}
	}
	client, monitor := map[string]string{}, map[string][]string{}
	for _, r := range regions {
		routes := make([]string, nodes[r])
		for i := range routes {
			routes[i] = meshtest.FreeAddr(t)
		}
		conf := "region.conf"
		if nodes[r] == 1 {
			conf = "region-single.conf"
		}
		for i := range nodes[r] {
			addr, mon := meshtest.FreeAddr(t), meshtest.FreeAddr(t)
			monitor[r] = append(monitor[r], mon)
			if i == 0 {
				client[r] = addr
			}
			env := map[string]string{
				"MESH_SERVICE_PASSWORD": password, "MESH_AUTH_ISSUER": issuerPub,
				"MESH_REGION": r, "MESH_NODE_NAME": fmt.Sprintf("%s-%d", r, i+1),
				"MESH_NATS_LISTEN": addr, "MESH_NATS_WS_LISTEN": meshtest.FreeAddr(t), "MESH_NATS_MONITOR": mon,
				"MESH_NATS_STORE": t.TempDir(), "MESH_NATS_LEAF_LISTEN": meshtest.FreeAddr(t),
				"MESH_NATS_CLUSTER_LISTEN": routes[i], "MESH_NATS_GATEWAY_LISTEN": gateways[r][i],
				"MESH_NATS_GATEWAY_ADVERTISE": gateways[r][i],
			}
			for j, route := range routes {
				env[fmt.Sprintf("MESH_NATS_ROUTE_%d", j+1)] = "nats-route://" + route
			}
			for j, g := range regions {
				env[fmt.Sprintf("MESH_GATEWAY_%d_NAME", j+1)] = g
				env[fmt.Sprintf("MESH_GATEWAY_%d_URL", j+1)] = "nats://" + gateways[g][0]
			}
			natsserver.Start(t, filepath.Join("..", "..", "deploy", "nats", conf), env, addr)
		}
	}
	for _, r := range regions {
		for i, mon := range monitor[r] {
			var vz struct {
				Gateway struct {
					Advertise string `json:"advertise"`
				} `json:"gateway"`
			}
			if !getJSON(mon, "/varz", &vz) || vz.Gateway.Advertise != gateways[r][i] {
				t.Fatalf("%s node %d advertises its gateway at %q; want %s", r, i+1, vz.Gateway.Advertise, gateways[r][i])
			}
		}
	}
	meshtest.Eventually(t, 60*time.Second, func() bool {
		for _, r := range regions {
			for _, mon := range monitor[r] {
				var gz struct {
					Name     string `json:"name"`
					Outbound map[string]struct {
						Connection *struct{} `json:"connection"`
					} `json:"outbound_gateways"`
				}
				if !getJSON(mon, "/gatewayz", &gz) || gz.Name != r {
					return false
				}
				for _, o := range regions {
					if o != r && gz.Outbound[o].Connection == nil {
						return false
					}
				}
				if !natsserver.Healthy(mon) {
					return false
				}
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
