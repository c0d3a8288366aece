package clustertest

import (
	"testing"

	"github.com/nats-io/nats.go"
)

// metaSubjects are the JetStream API requests that need the meta leader:
// creating or updating streams and consumers, listing streams.
var metaSubjects = []string{
	"$JS.API.STREAM.CREATE.>", "$JS.API.STREAM.UPDATE.>", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST",
	"$JS.API.CONSUMER.CREATE.>", "$JS.API.CONSUMER.DURABLE.CREATE.>",
}

// MetaRequests records the JetStream API requests that need the meta
// leader, made in the account of the connection that watches: what a
// process asks of a meta group that may have no quorum.
type MetaRequests struct {
	nc *nats.Conn
	// msgs is filled by the connection's reader, so a flush returns only
	// once every request sent before it is in.
	msgs chan *nats.Msg
}

// WatchMetaRequests records the meta requests nc's account sees from now
// on.
func WatchMetaRequests(t testing.TB, nc *nats.Conn) *MetaRequests {
	t.Helper()
	m := &MetaRequests{nc: nc, msgs: make(chan *nats.Msg, 1024)}
	for _, subj := range metaSubjects {
		if _, err := nc.ChanSubscribe(subj, m.msgs); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return m
}

// Take returns the subjects of the requests made since the watch began or
// the last Take.
func (m *MetaRequests) Take(t testing.TB) []string {
	t.Helper()
	if err := m.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for {
		select {
		case msg := <-m.msgs:
			seen = append(seen, msg.Subject)
		default:
			return seen
		}
	}
}
