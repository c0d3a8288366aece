// Package clustertest runs a real NATS cluster inside a test process: a few
// nats-server instances with JetStream, routed to each other on loopback
// through links the test can cut (a network partition) and servers it can
// stop and start again (a node lost and back). Tests of what the platform
// does on a cluster use it instead of the single embedded server.
package clustertest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
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
	t     testing.TB
	opts  Options
	mu    sync.Mutex
	srv   []*server.Server
	dirs  []string
	ports []int // client ports, kept across restarts
	// links[i][j] carries the routes server i opens to server j.
	links [][]*link
}

// Start starts a cluster and waits until JetStream answers on every node
// (unless opts.Deferred). It is shut down when the test ends.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	n := opts.Nodes + opts.Relays
	c := &Cluster{t: t, opts: opts, srv: make([]*server.Server, n), dirs: make([]string, n), ports: make([]int, n), links: make([][]*link, n)}
	for i := range n {
		c.dirs[i] = t.TempDir()
		c.links[i] = make([]*link, n)
		for j := range n {
			if j == i {
				continue
			}
			l, err := newLink()
			if err != nil {
				t.Fatalf("clustertest: link: %v", err)
			}
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
func (c *Cluster) Size() int { return len(c.srv) }

// Name is server i's name.
func (c *Cluster) Name(i int) string { return fmt.Sprintf("n%d", i) }

// Start starts server i (again, after Stop: same name, ports and store).
func (c *Cluster) Start(i int) {
	c.t.Helper()
	jsNode := i < c.opts.Nodes
	o := &server.Options{
		ServerName: c.Name(i),
		Host:       "127.0.0.1",
		Port:       -1,
		NoLog:      true,
		NoSigs:     true,
		JetStream:  jsNode,
		StoreDir:   c.dirs[i],
	}
	if len(c.srv) > 1 {
		o.Cluster = server.ClusterOpts{
			Name: "clustertest",
			Host: "127.0.0.1",
			Port: -1,
			// Servers learn about each other only from their configured
			// routes: a route told by gossip would bypass the links.
			Advertise: "127.0.0.1:1",
		}
	}
	c.mu.Lock()
	if c.ports[i] != 0 {
		o.Port = c.ports[i]
	}
	for j, l := range c.links[i] {
		if j != i {
			o.Routes = append(o.Routes, &url.URL{Scheme: "nats-route", Host: l.addr()})
		}
	}
	c.mu.Unlock()
	s, err := server.NewServer(o)
	if err != nil {
		c.t.Fatalf("clustertest: server %d: %v", i, err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		c.t.Fatalf("clustertest: server %d did not start", i)
	}
	c.mu.Lock()
	c.srv[i] = s
	c.ports[i] = s.Addr().(*net.TCPAddr).Port
	for k := range c.srv {
		if k != i {
			c.links[k][i].setTarget(s.ClusterAddr().String())
		}
	}
	c.mu.Unlock()
}

// Stop shuts server i down (a node lost); Start brings it back.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	s := c.srv[i]
	c.srv[i] = nil
	c.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// Server returns server i, or nil while it is stopped.
func (c *Cluster) Server(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.srv[i]
}

// URL is server i's client URL.
func (c *Cluster) URL(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("nats://127.0.0.1:%d", c.ports[i])
}

// URLs lists the client URLs of every server, comma-separated, as an
// operator gives them to a service. Servers never started are left out.
func (c *Cluster) URLs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var urls []string
	for _, p := range c.ports {
		if p != 0 {
			urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", p))
		}
	}
	return strings.Join(urls, ",")
}

// Cut partitions servers i and j from each other; Heal joins them again.
func (c *Cluster) Cut(i, j int) {
	c.links[i][j].setCut(true)
	c.links[j][i].setCut(true)
}

// Heal undoes Cut.
func (c *Cluster) Heal(i, j int) {
	c.links[i][j].setCut(false)
	c.links[j][i].setCut(false)
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
// and answers account requests.
func (c *Cluster) WaitJetStream() {
	c.t.Helper()
	c.waitFor(30*time.Second, "JetStream on every node", func() bool {
		for i := range c.opts.Nodes {
			s := c.Server(i)
			if s == nil {
				continue
			}
			if !s.JetStreamIsCurrent() || s.JetStreamIsClustered() && jsLeader(s) == "" {
				return false
			}
		}
		return true
	})
}

func jsLeader(s *server.Server) string {
	jsz, err := s.Jsz(&server.JSzOptions{})
	if err != nil || jsz.Meta == nil {
		return ""
	}
	return jsz.Meta.Leader
}

// StreamLeader returns the index of the node leading stream, waiting until
// it has one.
func (c *Cluster) StreamLeader(stream string) int {
	c.t.Helper()
	leader := -1
	c.waitFor(30*time.Second, "a leader of stream "+stream, func() bool {
		for i := range c.opts.Nodes {
			if s := c.Server(i); s != nil && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
				leader = i
				return true
			}
		}
		return false
	})
	return leader
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
		s := c.Server(i)
		if s == nil || c.Name(i) != name {
			continue
		}
		subs, err := s.Subsz(&server.SubszOptions{Subscriptions: true, Account: server.DEFAULT_GLOBAL_ACCOUNT, Test: "$JS.API.DIRECT.GET." + stream})
		if err != nil {
			return false
		}
		for _, sub := range subs.Subs {
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
	for i := range c.srv {
		c.Stop(i)
	}
	for _, ls := range c.links {
		for _, l := range ls {
			if l != nil {
				l.close()
			}
		}
	}
}
