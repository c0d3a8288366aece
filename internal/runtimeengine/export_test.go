package runtimeengine

import "time"

// LostAnswer has a NATS transport treat the claiming request of key as
// one whose answer never came, as a reconnect at the wrong moment does.
func LostAnswer(tr Transport, key string) {
	tr.(*natsTransport).lost(key, time.Now())
}
