package adapter

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// replyFlushTimeout bounds how long a shutdown whose grace ran out waits
// for the replies still being written (they are written at once; only a
// client that stopped reading holds one).
const replyFlushTimeout = 5 * time.Second

// lameDuckQuiet is how long a stopping adapter keeps answering 503 after
// the last connection arrived before it closes its port.
const lameDuckQuiet = 200 * time.Millisecond

// activeConns counts the connections with a request being answered, from
// the server's connection states: a connection turns idle only once its
// reply is flushed, which a handler's return does not promise.
type activeConns struct {
	mu     sync.Mutex
	active map[net.Conn]bool
	idle   []chan struct{}
	// lastNew is when the last connection was accepted.
	lastNew time.Time
}

// track is the http.Server's ConnState hook.
func (a *activeConns) track(c net.Conn, state http.ConnState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if state == http.StateNew {
		a.lastNew = time.Now()
	}
	if state == http.StateActive {
		if a.active == nil {
			a.active = map[net.Conn]bool{}
		}
		a.active[c] = true
		return
	}
	delete(a.active, c)
	if len(a.active) == 0 {
		for _, ch := range a.idle {
			close(ch)
		}
		a.idle = nil
	}
}

// done is closed once no connection has a request being answered.
func (a *activeConns) done() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch := make(chan struct{})
	if len(a.active) == 0 {
		close(ch)
		return ch
	}
	a.idle = append(a.idle, ch)
	return ch
}

// quietFor returns how long ago the last connection was accepted.
func (a *activeConns) quietFor() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return time.Since(a.lastNew)
}
