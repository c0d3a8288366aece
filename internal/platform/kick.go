package platform

import (
	"strings"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// kickRevoked disconnects a runtime's NATS connections as soon as its
// credential is revoked or replaced. Requests from such a connection are
// refused anyway; dropping it also stops it receiving queue messages and its
// agent's events. Only the process that embeds the server can do this; with an
// external server a connection lasts until its authorisation expires.
func kickRevoked(nc *nats.Conn, ns *server.Server, log zerolog.Logger) (*nats.Subscription, error) {
	return nc.Subscribe(bus.EventFilter("", string(mesh.KindRuntime), ""), func(m *nats.Msg) {
		if bus.EventType(m.Header) != mesh.EventRuntimeRevoked {
			return
		}
		_, _, runtimeID, ok := bus.ParseEventSubject(m.Subject)
		if !ok {
			return
		}
		if disconnectUser(ns, bus.RuntimeUserName(runtimeID)) {
			log.Info().Str("runtime_id", runtimeID).Msg("disconnected a revoked runtime")
		}
	})
}

// kickDeletedConsumers disconnects an event consumer credential's NATS
// connections as soon as the credential is deleted, as kickRevoked does for
// runtimes: until it re-authenticates, a connection keeps the permissions it
// was admitted with.
func kickDeletedConsumers(nc *nats.Conn, ns *server.Server, log zerolog.Logger) (*nats.Subscription, error) {
	return nc.Subscribe(bus.ConsumerRevokedPattern(), func(m *nats.Msg) {
		id := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
		if !mesh.ValidID(id) {
			return
		}
		if disconnectUser(ns, bus.ConsumerUserName(id)) {
			log.Info().Str("consumer_id", id).Msg("disconnected a deleted event consumer")
		}
	})
}

// disconnectUser closes every client connection the auth callout admitted as
// user, and reports whether there was one.
func disconnectUser(ns *server.Server, user string) bool {
	connz, err := ns.Connz(&server.ConnzOptions{Limit: 1 << 20, Username: true})
	if err != nil {
		return false
	}
	found := false
	for _, c := range connz.Conns {
		if c.AuthorizedUser == user {
			_ = ns.DisconnectClientByID(c.Cid)
			found = true
		}
	}
	return found
}
