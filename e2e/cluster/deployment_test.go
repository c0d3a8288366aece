package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/internal/testkit/natsserver"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nkeys"
)

// Timings of the deployments: a lease long enough that a busy machine
// never loses a run whose runtime is alive.
const (
	testLease            = 15 * time.Second
	testHeartbeatTimeout = 15 * time.Second
	// runtimeConcurrency is how many tasks each runtime works on at once.
	runtimeConcurrency = 8
)

// node is one nats-server of the cluster, run from deploy/nats/cluster.conf
// as shipped.
type node struct {
	name, client, monitor string
	env                   map[string]string
	proc                  *natsserver.Process
}

// URL is the node's client URL.
func (n *node) URL() string { return "nats://" + n.client }

// deployment is the platform as an operator runs it on one host: three
// nats-server nodes with the shipped cluster configuration, and each service
// as `a2a-platform serve <service> --replicas 3` processes, two copies of
// each on different nodes.
type deployment struct {
	t        *testing.T
	dir      string
	password string
	owner    string
	nodes    []*node
	procs    *meshtest.Procs
	mu       sync.Mutex
	// focus holds the ids of runs that went wrong: on failure, every line
	// of every program that names one is shown.
	focus []string
	// gateways are the base URLs of the gateway copies.
	gateways []string
	p        *meshtest.Platform
}

// startNodes starts three nodes one right after the other and returns when
// each accepts client connections: JetStream may not have a quorum yet.
func startNodes(t *testing.T) *deployment {
	t.Helper()
	d := newNodes(t)
	for i := range d.nodes {
		d.startNode(i)
	}
	return d
}

// newNodes makes the secrets and the configuration of three nodes, none
// started yet.
func newNodes(t *testing.T) *deployment {
	t.Helper()
	d := &deployment{t: t, dir: t.TempDir(), procs: meshtest.NewProcs(t)}
	d.dumpOnFailure()
	issuer, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	issuerPub, _ := issuer.PublicKey()
	issuerSeed, _ := issuer.Seed()
	d.password = secret.NewToken("pw_")
	d.owner = secret.NewToken(secret.PrefixOwner)
	d.procs.Secret(d.password, d.owner, string(issuerSeed))
	for name, content := range map[string]string{"issuer.nk": string(issuerSeed), "owner.token": d.owner + "\n"} {
		if err := os.WriteFile(filepath.Join(d.dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	routes := make([]string, 3)
	for i := range 3 {
		n := &node{name: fmt.Sprintf("n%d", i+1), client: meshtest.FreeAddr(t), monitor: meshtest.FreeAddr(t)}
		routeAddr := meshtest.FreeAddr(t)
		routes[i] = "nats-route://" + routeAddr
		n.env = map[string]string{
			"MESH_SERVICE_PASSWORD":    d.password,
			"MESH_AUTH_ISSUER":         issuerPub,
			"MESH_NODE_NAME":           n.name,
			"MESH_NATS_LISTEN":         n.client,
			"MESH_NATS_WS_LISTEN":      meshtest.FreeAddr(t),
			"MESH_NATS_MONITOR":        n.monitor,
			"MESH_NATS_STORE":          filepath.Join(d.dir, "nats-"+n.name),
			"MESH_NATS_LEAF_LISTEN":    meshtest.FreeAddr(t),
			"MESH_NATS_CLUSTER_LISTEN": routeAddr,
		}
		d.nodes = append(d.nodes, n)
	}
	for _, n := range d.nodes {
		for j, r := range routes {
			n.env[fmt.Sprintf("MESH_NATS_ROUTE_%d", j+1)] = r
		}
	}
	return d
}

// startNode starts node i with deploy/nats/cluster.conf as shipped. It
// returns once the node takes clients, long before the cluster has formed.
func (d *deployment) startNode(i int) {
	d.t.Helper()
	n := d.nodes[i]
	n.proc = natsserver.Start(d.t, filepath.Join("..", "..", "deploy", "nats", "cluster.conf"), n.env, n.client)
}

// urls lists every node's client URL, comma-separated.
func (d *deployment) urls() string {
	var us []string
	for _, n := range d.nodes {
		us = append(us, n.URL())
	}
	return strings.Join(us, ",")
}

// serviceCopy is one `serve` process of a service.
type serviceCopy struct {
	*meshtest.Proc
	// health is its metrics address (/healthz, /readyz).
	health string
}

// startServices starts two copies of every service at once, copy k of the
// i-th service connected to node (i+k) mod 3, and returns the copies.
func (d *deployment) startServices() []serviceCopy {
	d.t.Helper()
	var copies []serviceCopy
	for i, svc := range platform.Services {
		for k := range 2 {
			n := d.nodes[(i+k)%len(d.nodes)]
			health := meshtest.FreeAddr(d.t)
			args := []string{"serve", svc, "--data-dir", filepath.Join(d.dir, fmt.Sprintf("%s-%d", svc, k)),
				"--nats-url", n.URL(), "--replicas", "3", "--log-level", "info",
				"--lease", testLease.String(), "--heartbeat-timeout", testHeartbeatTimeout.String(),
				"--metrics-listen", health}
			switch svc {
			case bus.ServiceCredentials:
				args = append(args, "--auth-issuer-seed-file", filepath.Join(d.dir, "issuer.nk"), "--nats-advertise", n.URL())
			case bus.ServiceGateway:
				addr := meshtest.FreeAddr(d.t)
				args = append(args, "--owner-token-file", filepath.Join(d.dir, "owner.token"), "--http", addr)
				d.gateways = append(d.gateways, "http://"+addr)
			}
			p := d.procs.Start(fmt.Sprintf("%s#%d on %s", svc, k+1, n.name), []string{"A2A_MESH_NATS_PASSWORD=" + d.password}, bins.Platform, args...)
			copies = append(copies, serviceCopy{Proc: p, health: health})
		}
	}
	d.p = meshtest.Remote(d.t, d.gateways[0], d.owner)
	return copies
}

// waitReady waits until every copy answers /readyz with 200.
func (d *deployment) waitReady(copies []serviceCopy, timeout time.Duration) {
	d.t.Helper()
	for _, c := range copies {
		meshtest.Eventually(d.t, timeout, func() bool {
			if c.Exited() {
				d.t.Fatalf("%s exited: %s\n%s", c.Name, c.Cmd.ProcessState, d.procs.Mask(c.Logs.String()))
			}
			resp, err := http.Get("http://" + c.health + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}, func() string { return c.Name + " never became ready:\n" + d.procs.Mask(c.Logs.String()) })
	}
}

// up starts the nodes and the services and waits until all are ready.
func up(t *testing.T) *deployment {
	d := startNodes(t)
	d.waitReady(d.startServices(), 90*time.Second)
	return d
}

// dumpOnFailure shows the end of every node's and program's output when
// the test fails.
func (d *deployment) dumpOnFailure() {
	d.t.Cleanup(func() {
		if !d.t.Failed() {
			return
		}
		for _, n := range d.nodes {
			if n.proc == nil {
				continue
			}
			d.t.Logf("---- nats-server %s ----\n%s", n.name, meshtest.Tail(d.procs.Mask(n.proc.Logs()), 6000))
		}
		programs := d.procs.All()
		d.mu.Lock()
		focus := append([]string(nil), d.focus...)
		d.mu.Unlock()
		for _, p := range programs {
			out := d.procs.Mask(p.Logs.String())
			var errs, warns, about []string
			for _, line := range strings.Split(out, "\n") {
				switch {
				case strings.Contains(line, `"level":"error"`):
					errs = append(errs, line)
				case strings.Contains(line, `"level":"warn"`):
					warns = append(warns, line)
				}
				for _, id := range focus {
					if strings.Contains(line, id) {
						about = append(about, line)
						break
					}
				}
			}
			d.t.Logf("---- %s: %d error lines ----\n%s\n---- its warnings (%d) ----\n%s\n---- its lines about the runs that went wrong ----\n%s\n---- its last output ----\n%s",
				p.Name, len(errs), meshtest.Tail(strings.Join(errs, "\n"), 4000), len(warns), meshtest.Tail(strings.Join(warns, "\n"), 3000),
				meshtest.Tail(strings.Join(about, "\n"), 6000), meshtest.Tail(out, 3000))
		}
	})
}

// metaLeader is the index of the node leading the JetStream meta group, as
// the nodes' monitoring reports it.
func (d *deployment) metaLeader() int {
	d.t.Helper()
	leader := -1
	meshtest.Eventually(d.t, 20*time.Second, func() bool {
		for _, n := range d.nodes {
			if n.proc == nil {
				continue
			}
			var jsz struct {
				Meta struct {
					Leader string `json:"leader"`
				} `json:"meta_cluster"`
			}
			resp, err := http.Get("http://" + n.monitor + "/jsz")
			if err != nil {
				continue
			}
			err = json.NewDecoder(resp.Body).Decode(&jsz)
			resp.Body.Close()
			if err != nil {
				continue
			}
			for i, m := range d.nodes {
				if m.name == jsz.Meta.Leader {
					leader = i
					return true
				}
			}
		}
		return false
	}, func() string { return "no node names a meta leader" })
	return leader
}

// kill ends node i at once (SIGKILL): a node lost.
func (d *deployment) kill(i int) {
	d.nodes[i].proc.Kill()
}

// connect opens a platform-service connection to every node.
func (d *deployment) connect() *bus.Conn {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.ConnConfig{URL: d.urls(), User: "mesh-service", Password: d.password, Name: "cluster test"})
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { conn.NC.Close() })
	return conn
}

// agent is an agent whose a2a-runtime runs on a machine of its own.
type agent struct {
	id, runtimeID string
	rt            *meshtest.Proc
}

// startAdapter runs a2a-adapter with the command provider and the script
// body, and returns its run-task URL. Its queue holds every task its
// runtime may send at once (runtimeConcurrency): a refusal would be an
// outcome of its own.
func (d *deployment) startAdapter(body string) string {
	d.t.Helper()
	return d.procs.StartAdapter(bins.Adapter, body, runtimeConcurrency)
}

// connectAgent creates an agent, pairs a new machine with it through the
// gateway, starts its runtime on the NATS node natsURL and waits until the
// platform lists it online.
func (d *deployment) connectAgent(name, endpoint, natsURL string) *agent {
	t := d.t
	t.Helper()
	a := d.p.CreateAgent(name)
	home := t.TempDir()
	code := d.p.PairingCode(a.ID)
	d.procs.Secret(code)
	env := []string{"HOME=" + home}
	pair := exec.Command(bins.Runtime, "pair", code, "--api-base", d.gateways[0], "--local-agent-endpoint", endpoint)
	pair.Env = append(os.Environ(), env...)
	if out, err := pair.CombinedOutput(); err != nil {
		t.Fatalf("a2a-runtime pair: %v\n%s", err, d.procs.Mask(string(out)))
	}
	var f struct {
		Profiles map[string]struct {
			RuntimeID    string `json:"runtime_id"`
			RuntimeToken string `json:"runtime_token"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal([]byte(meshtest.ReadFile(filepath.Join(home, ".a2a", "runtime.json"))), &f); err != nil {
		t.Fatal(err)
	}
	ag := &agent{id: a.ID}
	for _, p := range f.Profiles {
		ag.runtimeID = p.RuntimeID
		d.procs.Secret(p.RuntimeToken)
	}
	ag.rt = d.procs.Start("a2a-runtime of "+name, env, bins.Runtime, "start", "--transport", "nats", "--nats-url", natsURL,
		"--concurrency", fmt.Sprint(runtimeConcurrency), "--log-level", "info")
	var v mesh.RuntimeView
	meshtest.Eventually(t, 30*time.Second, func() bool {
		for _, v = range d.p.RuntimeViews(t, ag.id) {
			if v.RuntimeID == ag.runtimeID {
				return v.Status == mesh.PresenceOnline
			}
		}
		return false
	}, func() string {
		return fmt.Sprintf("runtime of %s is %q, not online:\n%s", name, v.Status, d.procs.Mask(ag.rt.Logs.String()))
	})
	return ag
}
