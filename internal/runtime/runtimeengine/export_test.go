package runtimeengine

import "time"

// LostAnswer has a transport treat the claiming request of key as one
// whose answer never came, as a reconnect at the wrong moment does.
func LostAnswer(tr Transport, key string) {
	lostOf(tr).add(key, time.Now())
}

func lostOf(tr Transport) *lostClaims {
	if t, ok := tr.(*httpTransport); ok {
		return &t.lost
	}
	return &tr.(*natsTransport).lost
}

// LostAnswers counts the claiming requests a transport will ask about
// again.
func LostAnswers(tr Transport) int {
	return lostOf(tr).len()
}

// AdapterEnv is the environment the runtime gives the adapter it starts.
var AdapterEnv = adapterEnv

// LostAnswerSentAt is LostAnswer for a claiming request sent at sent.
func LostAnswerSentAt(tr Transport, key string, sent time.Time) {
	lostOf(tr).add(key, sent)
}
