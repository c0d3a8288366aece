package clustertest

import (
	"testing"
)

// Proxy is a TCP proxy on loopback in front of a server's client port, as a
// load balancer in front of a region: what runtimes are told to connect to,
// which the test can make unreachable (as a region is from a network that
// lost its route there) and reachable again.
type Proxy struct {
	l *link
}

// NewProxy starts a proxy to target (host:port), closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := newLink()
	if err != nil {
		t.Fatalf("clustertest: proxy: %v", err)
	}
	l.setTarget(target)
	t.Cleanup(l.close)
	return &Proxy{l: l}
}

// URL is the proxy's nats:// URL.
func (p *Proxy) URL() string { return "nats://" + p.l.addr() }

// Block refuses new connections and closes the open ones, as a network
// that no longer reaches the target does to clients: their next read or
// write fails.
func (p *Proxy) Block() {
	p.l.setCut(true)
	p.l.dropAll()
}

// Unblock lets connections through again.
func (p *Proxy) Unblock() { p.l.setCut(false) }
