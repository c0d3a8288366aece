// Package credcache remembers the credentials the credential service
// admitted, by the credential's hash, while the record each was admitted
// from stays at the revision it had then. A view of the records' bucket, fed
// by a watch, tells: revoking, replacing or deleting a record changes it,
// and the next request of its credential after the view holds the change
// asks the credential service again, which refuses it. A caller thus pays
// one bus round trip per credential and record revision, not one per
// request.
package credcache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/bus"
)

const (
	// maxEntries bounds the remembered credentials; past it they are all
	// forgotten and asked for again, which costs a round trip each, never
	// a wrong answer.
	maxEntries = 1 << 16
	// maxAge bounds how long a yes is remembered even when the view saw no
	// change: a limit on what a watch that fell silent could let through.
	maxAge = time.Minute
	// viewWait bounds how long a yes waits for the view to catch up with
	// the revision it was read at; past it the yes is not remembered.
	viewWait = time.Second
)

// Record is what the view keeps of one record: its revision, and whether
// it admits its credential at that revision.
type Record struct {
	Rev    uint64
	Active bool
}

// Memory remembers admitted credentials of one bucket's records. S is the
// part of a record the view decodes, V what a credential was admitted as.
type Memory[S, V any] struct {
	view *bus.Mirror[S, Record]
	mu   sync.Mutex
	// entries maps a credential's hash to what it was admitted as.
	entries map[string]entry[V]
	now     func() time.Time
	log     zerolog.Logger
}

type entry[V any] struct {
	value V
	// key and rev are the record the credential was admitted from.
	key string
	rev uint64
	at  time.Time
}

// Start builds the view of bucket, projecting each record with project
// (false: a key the view skips), and waits until it has read the bucket.
func Start[S, V any](ctx context.Context, js jetstream.JetStream, bucket string, project func(key string, s *S, rev uint64) (Record, bool), log zerolog.Logger) (*Memory[S, V], error) {
	view, err := bus.StartMirror(ctx, js, bucket, bus.MirrorConfig[S, Record]{Project: project, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("view of %s: %w", bucket, err)
	}
	if err := view.WaitReady(ctx); err != nil {
		_ = view.Stop()
		return nil, fmt.Errorf("view of %s: %w", bucket, err)
	}
	return &Memory[S, V]{view: view, entries: map[string]entry[V]{}, now: time.Now, log: log}, nil
}

// Get returns what the credential of hash was admitted as, while its
// record is still at the revision it was admitted at and active.
func (m *Memory[S, V]) Get(hash string) (V, bool) {
	m.mu.Lock()
	e, ok := m.entries[hash]
	m.mu.Unlock()
	var none V
	if !ok {
		return none, false
	}
	cur, ok := m.view.Get(e.key)
	if !ok || !cur.Active || cur.Rev != e.rev || m.now().Sub(e.at) > maxAge {
		m.mu.Lock()
		delete(m.entries, hash)
		m.mu.Unlock()
		return none, false
	}
	return e.value, true
}

// Put notes a yes of the credential service, read from the record key at
// revision rev, when the view holds that very revision, active. A view
// behind it (the record was written a moment ago, a key just created) is
// waited for, briefly; a view ahead of it (the record changed meanwhile)
// remembers nothing, and the next request asks again.
func (m *Memory[S, V]) Put(ctx context.Context, hash, key string, rev uint64, v V) {
	if rev == 0 {
		return
	}
	cur, ok := m.view.Get(key)
	if !ok || cur.Rev < rev {
		wait, cancel := context.WithTimeout(ctx, viewWait)
		err := m.view.WaitRevision(wait, key, rev)
		cancel()
		if err != nil {
			return
		}
		cur, ok = m.view.Get(key)
	}
	if !ok || !cur.Active || cur.Rev != rev {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.entries) >= maxEntries {
		clear(m.entries)
	}
	m.entries[hash] = entry[V]{value: v, key: key, rev: rev, at: m.now()}
}

// Ended is told that this process just ended the record key (revoked,
// replaced, deleted), so its credentials' next requests are refused without
// waiting for the view. Forgetting alone would not do: a request admitted
// by the credential service just before the change could remember the
// credential again while the view still holds the record before it. Once
// the view has caught up with the bucket it holds the change, and nothing
// of the record is remembered again.
func (m *Memory[S, V]) Ended(ctx context.Context, key string) {
	if err := m.view.Sync(ctx); err != nil {
		m.log.Warn().Err(err).Str("record", key).Msg("credentials view not caught up after a revocation; the credential may be admitted until it is")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for hash, e := range m.entries {
		if e.key == key {
			delete(m.entries, hash)
		}
	}
}

// Stop stops the view.
func (m *Memory[S, V]) Stop() { _ = m.view.Stop() }
