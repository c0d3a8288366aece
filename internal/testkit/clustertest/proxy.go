package clustertest

import (
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/tcplink"
)

// Proxy is a TCP proxy on loopback in front of a server's client port, as a
// load balancer in front of a region: what runtimes are told to connect to,
// which the test can make unreachable (as a region is from a network that
// lost its route there) and reachable again.
type Proxy struct {
	l *tcplink.Link
}

// NewProxy starts a proxy to target (host:port), closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := tcplink.New()
	if err != nil {
		t.Fatalf("clustertest: proxy: %v", err)
	}
	l.SetTarget(target)
	t.Cleanup(l.Close)
	return &Proxy{l: l}
}

// URL is the proxy's nats:// URL.
func (p *Proxy) URL() string { return "nats://" + p.l.Addr() }

// Block refuses new connections and closes the open ones, as a network
// that no longer reaches the target does to clients: their next read or
// write fails.
func (p *Proxy) Block() {
	p.l.SetCut(true)
	p.l.DropAll()
}

// Unblock lets connections through again.
func (p *Proxy) Unblock() { p.l.SetCut(false) }
