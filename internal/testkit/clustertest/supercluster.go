package clustertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/natsserver"
	"github.com/a2amesh/a2amesh/internal/testkit/tcplink"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// Region sizes one region of a supercluster.
type Region struct {
	// Name is the region's name: its NATS cluster and gateway name.
	Name string
	// Nodes is its number of servers, each with JetStream. Default 1.
	Nodes int
}

// SuperclusterOptions size a supercluster.
type SuperclusterOptions struct {
	// Regions are the regions, each a cluster of its own, joined to every
	// other by gateways. At least two.
	Regions []Region
	// Delay is added to every gateway link, each way: a message from one
	// region reaches another Delay later than on loopback. SetDelay changes
	// it per pair of regions. Default none.
	Delay time.Duration
}

// Supercluster is a running NATS supercluster: regions of nats-server
// processes with JetStream, each region a cluster, every region joined to
// every other by gateways that run through links the test can slow down.
// Every server has the platform's accounts and auth callout as the shipped
// configuration has them (bus.AccountsConfig): the services connect as a
// password user (Password), runtimes through the callout, answered by a
// credentials service holding IssuerSeed. Every server also takes leaf
// node connections (LeafURL).
//
// Gateway connections from region a to a server of region b run through a
// link of their own, which adds the delay of the pair. Servers learn of
// each other's gateways only from their configuration: a gateway address
// told by gossip would bypass the links.
type Supercluster struct {
	t        testing.TB
	regions  []*region
	password string
	issuer   nkeys.KeyPair
	// links[a][b][j] carries the gateway connections region a opens to
	// server j of region b.
	links map[string]map[string][]*tcplink.Link
}

type region struct {
	name  string
	nodes []*server
}

// server is one nats-server; its addresses and store outlive restarts.
type server struct {
	name, dir                                 string
	client, route, gateway, monitor, leafnode string
	mu                                        sync.Mutex
	proc                                      *natsserver.Process
}

func (s *server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil
}

// StartSupercluster starts every region and returns once the gateways have
// joined every region to every other and JetStream answers on every server.
// It is shut down when the test ends.
func StartSupercluster(t testing.TB, opts SuperclusterOptions) *Supercluster {
	t.Helper()
	if len(opts.Regions) < 2 {
		t.Fatal("clustertest: a supercluster needs at least two regions")
	}
	issuer, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	sc := &Supercluster{t: t, password: secret.NewToken("pw_"), issuer: issuer, links: map[string]map[string][]*tcplink.Link{}}
	t.Cleanup(sc.shutdown)
	for _, r := range opts.Regions {
		if r.Nodes == 0 {
			r.Nodes = 1
		}
		reg := &region{name: r.Name}
		for i := range r.Nodes {
			reg.nodes = append(reg.nodes, &server{
				name: fmt.Sprintf("%s-n%d", r.Name, i+1), dir: t.TempDir(),
				client: natsserver.FreeAddr(t), route: natsserver.FreeAddr(t), gateway: natsserver.FreeAddr(t),
				monitor: natsserver.FreeAddr(t), leafnode: natsserver.FreeAddr(t),
			})
		}
		sc.regions = append(sc.regions, reg)
	}
	for _, a := range sc.regions {
		sc.links[a.name] = map[string][]*tcplink.Link{}
		for _, b := range sc.regions {
			if a == b {
				continue
			}
			for _, n := range b.nodes {
				l, err := tcplink.New()
				if err != nil {
					t.Fatalf("clustertest: gateway link: %v", err)
				}
				l.SetTarget(n.gateway)
				l.SetDelay(opts.Delay)
				sc.links[a.name][b.name] = append(sc.links[a.name][b.name], l)
			}
		}
	}
	for _, r := range sc.regions {
		sc.startRegion(r)
	}
	sc.WaitJoined()
	sc.WaitJetStream()
	return sc
}

// Regions lists the regions' names in the order they were given.
func (sc *Supercluster) Regions() []string {
	var names []string
	for _, r := range sc.regions {
		names = append(names, r.name)
	}
	return names
}

// Nodes is the number of servers of region.
func (sc *Supercluster) Nodes(region string) int { return len(sc.region(region).nodes) }

// URL is the client URL of server i of region.
func (sc *Supercluster) URL(region string, i int) string {
	return "nats://" + sc.region(region).nodes[i].client
}

// URLs lists the client URLs of every server of region, comma-separated, as
// an operator gives them to a service or a runtime of that region.
func (sc *Supercluster) URLs(region string) string {
	var urls []string
	for i := range sc.region(region).nodes {
		urls = append(urls, sc.URL(region, i))
	}
	return strings.Join(urls, ",")
}

// LeafURL is where leaf nodes connect to server i of region, without a
// credential (nats-leaf://host:port).
func (sc *Supercluster) LeafURL(region string, i int) string {
	return "nats-leaf://" + sc.region(region).nodes[i].leafnode
}

// MonitorAddr is the monitoring address (host:port) of server i of region.
func (sc *Supercluster) MonitorAddr(region string, i int) string {
	return sc.region(region).nodes[i].monitor
}

// Password is the password of the services' user, bus's "mesh-service".
func (sc *Supercluster) Password() string { return sc.password }

// ServiceUser is the services' user, as the accounts configuration names it.
const ServiceUser = bus.DefaultServiceUser

// IssuerSeed is the seed of the account nkey that signs the auth callout's
// answers: what the credentials service is given (--auth-issuer-seed-file).
func (sc *Supercluster) IssuerSeed() string {
	seed, err := sc.issuer.Seed()
	if err != nil {
		sc.t.Fatal(err)
	}
	return string(seed)
}

// Connect opens a connection as the services' user to server i of region,
// closed at the end of the test.
func (sc *Supercluster) Connect(region string, i int) (*nats.Conn, jetstream.JetStream) {
	sc.t.Helper()
	nc, err := nats.Connect(sc.URL(region, i), nats.UserInfo(ServiceUser, sc.password),
		nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		sc.t.Fatalf("clustertest: connect to %s server %d: %v", region, i, err)
	}
	sc.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		sc.t.Fatal(err)
	}
	return nc, js
}

// SetDelay sets the delay added to the gateway links between regions a and
// b, in both directions, open connections included.
func (sc *Supercluster) SetDelay(a, b string, d time.Duration) {
	for _, l := range sc.links[a][b] {
		l.SetDelay(d)
	}
	for _, l := range sc.links[b][a] {
		l.SetDelay(d)
	}
}

// Stop shuts every server of region down (SIGTERM, as an operator stops
// them): a region lost. Start brings it back.
func (sc *Supercluster) Stop(region string) {
	var wg sync.WaitGroup
	for _, n := range sc.region(region).nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.mu.Lock()
			p := n.proc
			n.proc = nil
			n.mu.Unlock()
			if p != nil {
				p.Stop()
			}
		}()
	}
	wg.Wait()
}

// Start starts region's servers again after Stop, with the same names,
// ports and stores, and returns once the gateways have joined it to every
// running region again. JetStream may still be catching up: WaitJetStream
// waits for it.
func (sc *Supercluster) Start(region string) {
	sc.t.Helper()
	sc.startRegion(sc.region(region))
	sc.WaitJoined()
}

func (sc *Supercluster) startRegion(r *region) {
	sc.t.Helper()
	for _, n := range r.nodes {
		path := filepath.Join(n.dir, "server.conf")
		if err := os.WriteFile(path, []byte(sc.config(r, n)), 0o600); err != nil {
			sc.t.Fatal(err)
		}
		p := natsserver.Start(sc.t, path, nil, n.client)
		n.mu.Lock()
		n.proc = p
		n.mu.Unlock()
	}
}

// config is server n's configuration file.
func (sc *Supercluster) config(r *region, n *server) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("server_name: %s", n.name)
	w("listen: %q", n.client)
	w("http: %q", n.monitor)
	w("max_payload: 4MB")
	w("jetstream { store_dir: %q, limits { default_max_consumers: -1 } }", filepath.Join(n.dir, "jetstream"))
	// Every server's routes include its own: a server ignores a route to
	// itself, and a region of one server still has the configured routes
	// that clustered JetStream asks for.
	var routes []string
	for _, m := range r.nodes {
		routes = append(routes, fmt.Sprintf("%q", "nats-route://"+m.route))
	}
	w("cluster { name: %s, listen: %q, routes: [ %s ] }", r.name, n.route, strings.Join(routes, ", "))
	w("gateway {")
	// An address no one listens on: what a server tells others of its own
	// gateway address must never replace the links.
	w("  name: %s, listen: %q, advertise: \"127.0.0.1:1\"", r.name, n.gateway)
	w("  gateways: [")
	for _, o := range sc.regions {
		if o == r {
			continue
		}
		var urls []string
		for _, l := range sc.links[r.name][o.name] {
			urls = append(urls, fmt.Sprintf("%q", "nats://"+l.Addr()))
		}
		w("    { name: %s, urls: [ %s ] }", o.name, strings.Join(urls, ", "))
	}
	w("  ]")
	w("}")
	w("leafnodes { listen: %q }", n.leafnode)
	issuer, err := sc.issuer.PublicKey()
	if err != nil {
		sc.t.Fatal(err)
	}
	w("%s", bus.AccountsConfig{Services: bus.NATSUser{User: ServiceUser, Password: sc.password}, AuthIssuer: issuer}.Render())
	return b.String()
}

// WaitJoined waits until every running server has an outbound gateway
// connection to every other region that has a running server.
func (sc *Supercluster) WaitJoined() {
	sc.t.Helper()
	sc.waitFor(60*time.Second, "gateways joining every running region", func() bool {
		up := map[string]bool{}
		for _, r := range sc.regions {
			for _, n := range r.nodes {
				if n.running() {
					up[r.name] = true
				}
			}
		}
		for _, r := range sc.regions {
			for _, n := range r.nodes {
				if !n.running() {
					continue
				}
				var gz gatewayz
				if !monitorGet(n.monitor, "/gatewayz", &gz) {
					return false
				}
				for name := range up {
					if name == r.name {
						continue
					}
					if o := gz.Outbound[name]; o == nil || o.Connection == nil {
						return false
					}
				}
			}
		}
		return true
	})
}

// WaitJetStream waits until every running server answers as healthy with
// a JetStream meta leader, and the leader knows every running server as a
// current peer: until it does, a stream placed in a region it has not
// heard of is refused with "no suitable peers for placement". It needs a
// quorum of the supercluster's servers.
func (sc *Supercluster) WaitJetStream() {
	sc.t.Helper()
	sc.waitFor(60*time.Second, "JetStream on every running server", func() bool {
		running := map[string]bool{}
		leader := ""
		for _, r := range sc.regions {
			for _, n := range r.nodes {
				if !n.running() {
					continue
				}
				running[n.name] = true
				if !natsserver.Healthy(n.monitor) {
					return false
				}
				var jsz metaz
				if !monitorGet(n.monitor, "/jsz", &jsz) || jsz.Meta == nil || jsz.Meta.Leader == "" {
					return false
				}
				leader = jsz.Meta.Leader
			}
		}
		return sc.leaderKnowsCurrent(leader, running)
	})
}

// metaz is the part of a server's /jsz that tells of the meta group.
type metaz struct {
	Meta *struct {
		Leader   string `json:"leader"`
		Replicas []struct {
			Name    string `json:"name"`
			Current bool   `json:"current"`
			Offline bool   `json:"offline"`
		} `json:"replicas"`
	} `json:"meta_cluster"`
}

// leaderKnowsCurrent reports whether the meta leader named leader counts
// every server in running, other than itself, as a current online peer.
func (sc *Supercluster) leaderKnowsCurrent(leader string, running map[string]bool) bool {
	for _, r := range sc.regions {
		for _, n := range r.nodes {
			if n.name != leader || !n.running() {
				continue
			}
			var jsz metaz
			if !monitorGet(n.monitor, "/jsz", &jsz) || jsz.Meta == nil || jsz.Meta.Leader != leader {
				return false
			}
			current := map[string]bool{leader: true}
			for _, p := range jsz.Meta.Replicas {
				if p.Current && !p.Offline {
					current[p.Name] = true
				}
			}
			for name := range running {
				if !current[name] {
					return false
				}
			}
			return true
		}
	}
	return false
}

// Traffic counts the messages and bytes that crossed gateways, from one
// region's point of view. Counts start from zero when a server starts.
type Traffic struct {
	SentMsgs, SentBytes         int64
	ReceivedMsgs, ReceivedBytes int64
}

// Sub is the traffic of t since before.
func (t Traffic) Sub(before Traffic) Traffic {
	return Traffic{
		SentMsgs: t.SentMsgs - before.SentMsgs, SentBytes: t.SentBytes - before.SentBytes,
		ReceivedMsgs: t.ReceivedMsgs - before.ReceivedMsgs, ReceivedBytes: t.ReceivedBytes - before.ReceivedBytes,
	}
}

// Msgs is every message counted, sent and received.
func (t Traffic) Msgs() int64 { return t.SentMsgs + t.ReceivedMsgs }

func (t *Traffic) add(sentMsgs, sentBytes, receivedMsgs, receivedBytes int64) {
	t.SentMsgs += sentMsgs
	t.SentBytes += sentBytes
	t.ReceivedMsgs += receivedMsgs
	t.ReceivedBytes += receivedBytes
}

type gatewayz struct {
	Outbound map[string]*remoteGateway   `json:"outbound_gateways"`
	Inbound  map[string][]*remoteGateway `json:"inbound_gateways"`
}

type remoteGateway struct {
	Connection *struct {
		InMsgs   int64 `json:"in_msgs"`
		OutMsgs  int64 `json:"out_msgs"`
		InBytes  int64 `json:"in_bytes"`
		OutBytes int64 `json:"out_bytes"`
	} `json:"connection"`
}

// GatewayTraffic is what region's running servers exchanged with each other
// region over their gateway connections, in every account (the system
// account's traffic, JetStream's meta group among it, included), from the
// servers' /gatewayz.
func (sc *Supercluster) GatewayTraffic(region string) map[string]Traffic {
	sc.t.Helper()
	out := map[string]Traffic{}
	for i, n := range sc.region(region).nodes {
		if !n.running() {
			continue
		}
		var gz gatewayz
		if !monitorGet(n.monitor, "/gatewayz", &gz) {
			sc.t.Fatalf("clustertest: /gatewayz of %s server %d", region, i)
		}
		count := func(name string, g *remoteGateway) {
			if g == nil || g.Connection == nil {
				return
			}
			t := out[name]
			c := g.Connection
			t.add(c.OutMsgs, c.OutBytes, c.InMsgs, c.InBytes)
			out[name] = t
		}
		for name, g := range gz.Outbound {
			count(name, g)
		}
		for name, gs := range gz.Inbound {
			for _, g := range gs {
				count(name, g)
			}
		}
	}
	return out
}

// AccountTraffic is what region's running servers sent to and received from
// other regions over gateways in one account (bus.AccountPlatform, say),
// from the servers' /accstatz: the platform's own traffic, without the
// system account's.
func (sc *Supercluster) AccountTraffic(region, account string) Traffic {
	sc.t.Helper()
	var total Traffic
	for i, n := range sc.region(region).nodes {
		if !n.running() {
			continue
		}
		var stz struct {
			Accounts []struct {
				Account  string    `json:"acc"`
				Sent     dataStats `json:"sent"`
				Received dataStats `json:"received"`
			} `json:"account_statz"`
		}
		if !monitorGet(n.monitor, "/accstatz?unused=1", &stz) {
			sc.t.Fatalf("clustertest: /accstatz of %s server %d", region, i)
		}
		for _, a := range stz.Accounts {
			if a.Account != account {
				continue
			}
			total.add(a.Sent.Gateways.Msgs, a.Sent.Gateways.Bytes, a.Received.Gateways.Msgs, a.Received.Gateways.Bytes)
		}
	}
	return total
}

type dataStats struct {
	Gateways struct {
		Msgs  int64 `json:"msgs"`
		Bytes int64 `json:"bytes"`
	} `json:"gateways"`
}

func (sc *Supercluster) region(name string) *region {
	for _, r := range sc.regions {
		if r.name == name {
			return r
		}
	}
	sc.t.Fatalf("clustertest: no region %q (regions: %s)", name, strings.Join(sc.Regions(), ", "))
	return nil
}

func (sc *Supercluster) waitFor(limit time.Duration, what string, ok func() bool) {
	sc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for !ok() {
		select {
		case <-ctx.Done():
			sc.t.Fatalf("clustertest: no %s after %s", what, limit)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (sc *Supercluster) shutdown() {
	regions := slices.Clone(sc.regions)
	var wg sync.WaitGroup
	for _, r := range regions {
		wg.Add(1)
		go func() { defer wg.Done(); sc.Stop(r.name) }()
	}
	wg.Wait()
	for _, byTarget := range sc.links {
		for _, ls := range byTarget {
			for _, l := range ls {
				l.Close()
			}
		}
	}
}
