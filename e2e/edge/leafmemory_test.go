package edge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/internal/testkit/natsserver"
)

// leafMemoryRuntimes is how many idle runtimes each case connects.
const leafMemoryRuntimes = 2000

// BenchmarkHubMemory_RuntimesBehindASiteLeaf measures what an idle runtime
// costs the platform's NATS server (its resident memory, per runtime) when
// the runtime connects to it directly, and when it connects to a site's
// leaf node that carries every runtime of the site over one connection.
// Each runtime is a connection with a subscription on its own reply inbox,
// as a2a-runtime holds while it waits for work. The servers are plain
// nats-server processes: what is compared is the server's cost of a
// connection against its cost of a subscription behind a leaf, not the
// platform's permissions, which add to the direct case only.
//
//	go test -run '^$' -bench HubMemory -benchtime 1x ./e2e/edge/
func BenchmarkHubMemory_RuntimesBehindASiteLeaf(b *testing.B) {
	for _, viaLeaf := range []bool{false, true} {
		name := "direct"
		if viaLeaf {
			name = "behind_a_leaf"
		}
		b.Run(name, func(b *testing.B) {
			var perRuntime float64
			for b.Loop() {
				perRuntime = hubMemoryPerRuntime(b, viaLeaf)
			}
			b.ReportMetric(perRuntime, "KiB/runtime")
		})
	}
}

// hubMemoryPerRuntime starts a hub (and a leaf), connects the runtimes and
// returns the hub's resident memory grown per runtime.
func hubMemoryPerRuntime(b *testing.B, viaLeaf bool) float64 {
	b.Helper()
	dir := b.TempDir()
	hubAddr, hubMonitor, leafPort := natsserver.FreeAddr(b), natsserver.FreeAddr(b), natsserver.FreeAddr(b)
	hub := startPlain(b, dir, "hub", hubAddr, hubMonitor, "leafnodes { listen: \""+leafPort+"\" }")
	defer hub.Kill()
	target := hubAddr
	if viaLeaf {
		leafAddr, leafMonitor := natsserver.FreeAddr(b), natsserver.FreeAddr(b)
		leaf := startPlain(b, dir, "leaf", leafAddr, leafMonitor, "leafnodes { remotes: [ { url: \"nats-leaf://"+leafPort+"\" } ] }")
		defer leaf.Kill()
		meshtest.Eventually(b, 20*time.Second, func() bool { return varz(b, hubMonitor).Leafs == 1 },
			func() string { return "the leaf never connected to the hub" })
		target = leafAddr
	}
	before := settledMemory(b, hubMonitor)
	conns := make([]*nats.Conn, 0, leafMemoryRuntimes)
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	for i := range leafMemoryRuntimes {
		nc, err := nats.Connect("nats://"+target, nats.NoReconnect())
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, nc)
		if _, err := nc.SubscribeSync(fmt.Sprintf("_INBOX.rt%d.>", i)); err != nil {
			b.Fatal(err)
		}
	}
	// Every runtime's interest has reached the hub: a message to the
	// last inbox published at the hub arrives.
	last := conns[len(conns)-1]
	probe, err := last.SubscribeSync(fmt.Sprintf("_INBOX.rt%d.probe", leafMemoryRuntimes-1))
	if err != nil {
		b.Fatal(err)
	}
	hubConn, err := nats.Connect("nats://" + hubAddr)
	if err != nil {
		b.Fatal(err)
	}
	defer hubConn.Close()
	meshtest.Eventually(b, 30*time.Second, func() bool {
		_ = hubConn.Publish(probe.Subject, nil)
		_, err := probe.NextMsg(100 * time.Millisecond)
		return err == nil
	}, func() string { return "the runtimes' interest never reached the hub" })
	after := settledMemory(b, hubMonitor)
	return float64(after-before) / 1024 / leafMemoryRuntimes
}

// startPlain runs nats-server with a client port, a monitoring port and
// extra configuration.
func startPlain(b *testing.B, dir, name, addr, monitor, extra string) *natsserver.Process {
	b.Helper()
	conf := filepath.Join(dir, name+".conf")
	text := fmt.Sprintf("server_name: %s\nlisten: %q\nhttp: %q\nmax_connections: 100000\n%s\n", name, addr, monitor, extra)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		b.Fatal(err)
	}
	return natsserver.Start(b, conf, nil, addr)
}

type varzInfo struct {
	Mem   int64 `json:"mem"`
	Leafs int   `json:"leafnodes"`
}

func varz(b *testing.B, monitor string) varzInfo {
	b.Helper()
	resp, err := http.Get("http://" + monitor + "/varz")
	if err != nil {
		return varzInfo{}
	}
	defer resp.Body.Close()
	var v varzInfo
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		b.Fatal(err)
	}
	return v
}

// settledMemory is the server's resident memory once two readings a
// second apart agree within 1 %: a measurement taken at a pace, not a
// wait for an event.
func settledMemory(b *testing.B, monitor string) int64 {
	b.Helper()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	deadline := time.Now().Add(30 * time.Second)
	prev := varz(b, monitor).Mem
	for range tick.C {
		cur := varz(b, monitor).Mem
		if d := cur - prev; prev > 0 && cur > 0 && max(d, -d)*100 <= cur {
			return cur
		}
		if time.Now().After(deadline) {
			b.Fatalf("the memory of the server at %s never settled: %d then %d bytes", monitor, prev, cur)
		}
		prev = cur
	}
	return 0
}
