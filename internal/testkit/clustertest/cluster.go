// Package clustertest runs real NATS deployments for a test, as processes
// of their own (natsserver), as operators run them:
//
//   - Cluster: a few nats-server processes with JetStream, routed to each
//     other on loopback through links the test can cut (a network
//     partition), which it can stop and start again (a node lost and back).
//     Tests of what the platform does on a cluster use it instead of the
//     single embedded server.
//   - Supercluster: regions, each a cluster, joined by gateways whose links
//     add a delay the test chooses (a distance between regions), with the
//     platform's accounts and auth callout; it counts what crosses the
//     gateways (GatewayTraffic, AccountTraffic) and stops and restarts a
//     whole region (a region lost and back). Tests of multi-region
//     deployments use it.
package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/natsserver"
	"github.com/a2amesh/a2amesh/internal/testkit/tcplink"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options size a cluster.
type Options struct {
	// Nodes is the number of servers with JetStream. Default 3; 1 is a
	// single server without clustering.
	Nodes int
	// Relays is the number of extra servers without JetStream, routed to
	// every node: clients connected there reach JetStream only over routes,
	// so their requests may be answered by any node. Default 0.
	Relays int
	// Deferred leaves every server stopped: the test starts them with Start.
	Deferred bool
}

// Cluster is a running cluster. Servers 0..Nodes-1 have JetStream; relays
// follow.
type Cluster struct {
	t    testing.TB
	opts Options
	mu   sync.Mutex
	proc []*natsserver.Process
	dirs []string
	// client, cluster and monitor addresses of each server, kept across
	// restarts.
	client, route, monitor []string
	// links[i][j] carries the routes server i opens to server j.
	links [][]*tcplink.Link
}

// Start starts a cluster and waits until JetStream answers on every node
// (unless opts.Deferred). It is shut down when the test ends.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	n := opts.Nodes + opts.Relays
	c := &Cluster{t: t, opts: opts, proc: make([]*natsserver.Process, n), dirs: make([]string, n),
		client: make([]string, n), route: make([]string, n), monitor: make([]string, n), links: make([][]*tcplink.Link, n)}
	for i := range n {
		c.dirs[i] = t.TempDir()
		c.client[i], c.route[i], c.monitor[i] = natsserver.FreeAddr(t), natsserver.FreeAddr(t), natsserver.FreeAddr(t)
		c.links[i] = make([]*tcplink.Link, n)
	}
	for i := range n {
		for j := range n {
			if j == i {
				continue
			}
			l, err := tcplink.New()
			if err != nil {
				t.Fatalf("clustertest: link: %v", err)
			}
			l.SetTarget(c.route[j])
			c.links[i][j] = l
		}
	}
	t.Cleanup(c.shutdown)
	if !opts.Deferred {
		for i := range n {
			c.Start(i)
		}
		c.WaitJetStream()
	}
	return c
}

// Size is the number of servers, relays included.
func (c *Cluster) Size() int { return len(c.proc) }

// Name is server i's name.
func (c *Cluster) Name(i int) string { return fmt.Sprintf("n%d", i) }

// Start starts server i (again, after Stop: same name, ports and store).
func (c *Cluster) Start(i int) {
	c.t.Helper()
	var conf strings.Builder
	fmt.Fprintf(&conf, "server_name: %s\nlisten: %q\nhttp: %q\n", c.Name(i), c.client[i], c.monitor[i])
	if i < c.opts.Nodes {
		fmt.Fprintf(&conf, "jetstream { store_dir: %q }\n", c.dirs[i])
	}
	if len(c.proc) > 1 {
		var routes []string
		for j, l := range c.links[i] {
			if j != i {
				routes = append(routes, fmt.Sprintf("%q", "nats-route://"+l.Addr()))
			}
		}
		// Servers learn about each other only from their configured
		// routes: a route told by gossip would bypass the links.
		fmt.Fprintf(&conf, "cluster { name: clustertest, listen: %q, advertise: \"127.0.0.1:1\", routes: [ %s ] }\n",
			c.route[i], strings.Join(routes, ", "))
	}
	path := filepath.Join(c.dirs[i], "server.conf")
	if err := os.WriteFile(path, []byte(conf.String()), 0o600); err != nil {
		c.t.Fatal(err)
	}
	p := natsserver.Start(c.t, path, nil, c.client[i])
	c.mu.Lock()
	c.proc[i] = p
	c.mu.Unlock()
}

// Stop shuts server i down (a node lost); Start brings it back.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	p := c.proc[i]
	c.proc[i] = nil
	c.mu.Unlock()
	if p != nil {
		p.Stop()
	}
}

// running reports whether server i is up.
func (c *Cluster) running(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc[i] != nil
}

// URL is server i's client URL.
func (c *Cluster) URL(i int) string { return "nats://" + c.client[i] }

// URLs lists the client URLs of every server, comma-separated, as an
// operator gives them to a service.
func (c *Cluster) URLs() string {
	var urls []string
	for i := range c.client {
		urls = append(urls, c.URL(i))
	}
	return strings.Join(urls, ",")
}

// Cut partitions servers i and j from each other; Heal joins them again.
func (c *Cluster) Cut(i, j int) {
	c.links[i][j].SetCut(true)
	c.links[j][i].SetCut(true)
}

// Heal undoes Cut.
func (c *Cluster) Heal(i, j int) {
	c.links[i][j].SetCut(false)
	c.links[j][i].SetCut(false)
}

// Connect opens a plain client connection to server i, closed at the end
// of the test.
func (c *Cluster) Connect(i int) (*nats.Conn, jetstream.JetStream) {
	c.t.Helper()
	nc, err := nats.Connect(c.URL(i), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		c.t.Fatalf("clustertest: connect to server %d: %v", i, err)
	}
	c.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		c.t.Fatal(err)
	}
	return nc, js
}

// WaitJetStream waits until every running node has a JetStream meta leader
// and answers as healthy.
func (c *Cluster) WaitJetStream() {
	c.t.Helper()
	c.waitFor(30*time.Second, "JetStream on every node", func() bool {
		for i := range c.opts.Nodes {
			if !c.running(i) {
				continue
			}
			if !natsserver.Healthy(c.monitor[i]) {
				return false
			}
			var jsz struct {
				Meta *struct {
					Leader string `json:"leader"`
				} `json:"meta_cluster"`
			}
			if c.opts.Nodes > 1 && (!c.monitorGet(i, "/jsz", &jsz) || jsz.Meta == nil || jsz.Meta.Leader == "") {
				return false
			}
		}
		return true
	})
}

// StreamLeader returns the index of the node leading stream, waiting until
// it has one.
func (c *Cluster) StreamLeader(stream string) int {
	c.t.Helper()
	leader := -1
	c.waitFor(30*time.Second, "a leader of stream "+stream, func() bool {
		for i := range c.opts.Nodes {
			if !c.running(i) {
				continue
			}
			var jsz struct {
				Accounts []struct {
					Streams []struct {
						Name    string `json:"name"`
						Cluster *struct {
							Leader string `json:"leader"`
						} `json:"cluster"`
					} `json:"stream_detail"`
				} `json:"account_details"`
			}
			if !c.monitorGet(i, "/jsz?streams=true", &jsz) {
				continue
			}
			for _, a := range jsz.Accounts {
				for _, st := range a.Streams {
					if st.Name != stream {
						continue
					}
					if c.opts.Nodes == 1 {
						leader = 0
						return true
					}
					if st.Cluster != nil && st.Cluster.Leader == c.Name(i) {
						leader = i
						return true
					}
				}
			}
		}
		return false
	})
	return leader
}

// monitorGet reads a JSON document from server i's monitoring endpoint.
func (c *Cluster) monitorGet(i int, path string, v any) bool {
	return monitorGet(c.monitor[i], path, v)
}

// monitorGet reads a JSON document from the monitoring endpoint at addr.
func monitorGet(addr, path string, v any) bool {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}

// WaitCurrent waits until every replica of stream on a running node has
// applied everything its leader has and answers direct gets.
func (c *Cluster) WaitCurrent(stream string) {
	c.t.Helper()
	leader := c.StreamLeader(stream)
	nc, js := c.Connect(leader)
	defer nc.Close()
	c.waitFor(30*time.Second, "replicas of "+stream+" current", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := js.Stream(ctx, stream)
		if err != nil {
			return false
		}
		info := st.CachedInfo()
		if info.Cluster == nil {
			return true
		}
		for _, r := range info.Cluster.Replicas {
			if !r.Current || r.Lag > 0 || !c.answersDirectGets(r.Name, stream) {
				return false
			}
		}
		return true
	})
}

// answersDirectGets reports whether the named server takes part in direct
// gets of stream (a follower joins a moment after it is current).
func (c *Cluster) answersDirectGets(name, stream string) bool {
	for i := range c.opts.Nodes {
		if c.Name(i) != name || !c.running(i) {
			continue
		}
		var subsz struct {
			Subs []struct {
				Queue string `json:"qgroup"`
			} `json:"subscriptions_list"`
		}
		if !c.monitorGet(i, "/subsz?subs=1&acc=%24G&test=%24JS.API.DIRECT.GET."+stream, &subsz) {
			return false
		}
		for _, sub := range subsz.Subs {
			if sub.Queue != "" {
				return true
			}
		}
	}
	return false
}

func (c *Cluster) waitFor(limit time.Duration, what string, ok func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			c.t.Fatalf("clustertest: no %s after %s", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *Cluster) shutdown() {
	for i := range c.proc {
		c.Stop(i)
	}
	for _, ls := range c.links {
		for _, l := range ls {
			if l != nil {
				l.Close()
			}
		}
	}
}
