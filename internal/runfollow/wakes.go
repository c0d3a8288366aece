package runfollow

import (
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
)

// wakes shares the core subscriptions of a source's followers: one per
// subject, however many followers follow it (a hundred SSE streams of every
// event take one copy of each event, not a hundred), and the subject's
// reads (tail).
type wakes struct {
	src  *Source
	mu   sync.Mutex
	subs map[string]*wakeSub
}

// wakeSub is one subject's subscription, its shared reads and who listens
// to it.
type wakeSub struct {
	sub       *nats.Subscription
	tail      *tail
	listeners map[listener]struct{}
}

// listener is filter i of follower f.
type listener struct {
	f *Follower
	i int
}

// listen has filter i of f woken by the core messages on subject, and
// returns the subject's shared reads. A new subscription is sent to the
// server before listen returns, ahead of whatever the follower asks next on
// the connection.
func (w *wakes) listen(subject string, f *Follower, i int) (*tail, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subs == nil {
		w.subs = map[string]*wakeSub{}
	}
	ws := w.subs[subject]
	if ws == nil {
		ws = &wakeSub{tail: &tail{src: w.src, subject: subject}, listeners: map[listener]struct{}{}}
		sub, err := w.src.nc.Subscribe(subject, func(m *nats.Msg) { w.deliver(ws, m) })
		if err != nil {
			return nil, fmt.Errorf("follow %s: %w", subject, err)
		}
		ws.sub = sub
		w.subs[subject] = ws
	}
	ws.listeners[listener{f, i}] = struct{}{}
	return ws.tail, nil
}

// unlisten ends what listen started; the last listener of a subject ends
// its subscription.
func (w *wakes) unlisten(subject string, f *Follower, i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws := w.subs[subject]
	if ws == nil {
		return
	}
	delete(ws.listeners, listener{f, i})
	if len(ws.listeners) == 0 {
		_ = ws.sub.Unsubscribe()
		delete(w.subs, subject)
	}
}

func (w *wakes) deliver(ws *wakeSub, m *nats.Msg) {
	id := m.Header.Get(hdrMsgID)
	w.mu.Lock()
	defer w.mu.Unlock()
	for l := range ws.listeners {
		l.f.woken(l.i, id)
	}
}
