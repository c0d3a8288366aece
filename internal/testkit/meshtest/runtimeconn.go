package meshtest

import (
	"testing"

	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
)

// RuntimeConn connects to p's NATS as the runtime att, the way its engine
// does (its token, its private reply inbox), closed when the test ends.
// opts are added to the connection's options.
func (p *Platform) RuntimeConn(t testing.TB, att Attached, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(p.NATSURL(), append([]nats.Option{nats.Token(att.RuntimeToken), nats.CustomInboxPrefix(att.NATS.InboxPrefix)}, opts...)...)
	if err != nil {
		t.Fatalf("connect as runtime %s: %v", att.RuntimeID, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// RuntimeClient is the bus client of the runtime att's operations, over a
// connection made as RuntimeConn makes it.
func (p *Platform) RuntimeClient(t testing.TB, att Attached, opts ...nats.Option) *meshapi.RuntimeClient {
	t.Helper()
	return meshapi.NewClient(p.RuntimeConn(t, att, opts...)).Runtime(att.AgentID, att.RuntimeID)
}
