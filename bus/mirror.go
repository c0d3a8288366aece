package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// Mirror keeps an in-memory projection of every record of a bucket, fed by a
// watch on the bucket. Each service builds the read models it needs (list
// indexes, lease timers, credential caches) this way, from the bus alone.
type Mirror[T, P any] struct {
	mu      sync.RWMutex
	items   map[string]mirrorEntry[P]
	ready   chan struct{}
	watcher jetstream.KeyWatcher
	stream  jetstream.Stream
	cfg     MirrorConfig[T, P]
	// seen is the highest sequence of the stream watched the watch has
	// delivered; changed is closed (and replaced) whenever it grows, for
	// Sync and WaitRevision.
	seen    uint64
	changed chan struct{}
	// own, watching an aggregate of owned buckets, is this region's owned
	// bucket's stream; ownSeen the highest of its sequences the watch has
	// delivered (its writes reach the aggregate a moment later).
	own     jetstream.Stream
	ownSeen uint64
	// asked shares the questions Sync and SyncAfter ask the server
	// (mirrorsync.go).
	asked questions
}

type mirrorEntry[P any] struct {
	val P
	rev uint64
}

// MirrorConfig configures a Mirror.
type MirrorConfig[T, P any] struct {
	// Project turns a decoded record into what the mirror keeps. Returning
	// false drops the key from the mirror.
	Project func(key string, v *T, rev uint64) (P, bool)
	// OnChange, if set, is called after each change from the watch, with the
	// projection (nil when the key was deleted or dropped). It runs on the
	// watch goroutine: keep it short.
	OnChange func(key string, p *P)
	Logger   zerolog.Logger
}

// StartMirror starts watching bucket. Use WaitReady before trusting its
// contents. A global bucket is watched through this region's mirror of it
// where there is one (outside the origin region), so the watch stays in the
// region and goes on while the origin is unreachable.
func StartMirror[T, P any](ctx context.Context, js jetstream.JetStream, bucket string, cfg MirrorConfig[T, P]) (*Mirror[T, P], error) {
	if IsOwnedBucket(bucket) && ownedLayout(ctx, js) {
		return startAggregate(ctx, js, bucket, cfg)
	}
	if stream, ok := localMirror(ctx, js, bucket); ok {
		// The watch outlives the call that starts it.
		w, err := watchMirror(context.WithoutCancel(ctx), js, bucket, stream)
		if err != nil {
			return nil, fmt.Errorf("mirror %s: watch: %w", bucket, err)
		}
		return startMirror(bucket, w, stream, cfg), nil
	}
	bucket, err := OwnBucket(ctx, js, bucket)
	if err != nil {
		return nil, fmt.Errorf("mirror %s: %w", bucket, err)
	}
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("mirror %s: %w", bucket, err)
	}
	w, err := kv.WatchAll(context.WithoutCancel(ctx))
	if err != nil {
		return nil, fmt.Errorf("mirror %s: watch: %w", bucket, err)
	}
	stream, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		_ = w.Stop()
		return nil, fmt.Errorf("mirror %s: %w", bucket, err)
	}
	return startMirror(bucket, w, stream, cfg), nil
}

// startAggregate watches this region's aggregate of an owned bucket, and
// syncs with this region's owned bucket too (see Sync).
func startAggregate[T, P any](ctx context.Context, js jetstream.JetStream, bucket string, cfg MirrorConfig[T, P]) (*Mirror[T, P], error) {
	origin, err := originRegion(ctx, js)
	if err != nil {
		return nil, fmt.Errorf("mirror %s: %w", bucket, err)
	}
	region := connRegion(js)
	agg := aggregateIn(bucket, region, origin)
	stream, err := js.Stream(ctx, "KV_"+agg)
	if err != nil {
		return nil, fmt.Errorf("mirror %s: %w", bucket, err)
	}
	own, err := js.Stream(ctx, "KV_"+OwnerBucket(bucket, region))
	if err != nil {
		return nil, fmt.Errorf("mirror %s: %w", bucket, err)
	}
	w, err := watchAggregate(context.WithoutCancel(ctx), js, agg, stream)
	if err != nil {
		return nil, fmt.Errorf("mirror %s: watch: %w", bucket, err)
	}
	m := newMirror(w, stream, cfg)
	m.own = own
	go m.run(bucket)
	return m, nil
}

func startMirror[T, P any](bucket string, w jetstream.KeyWatcher, stream jetstream.Stream, cfg MirrorConfig[T, P]) *Mirror[T, P] {
	m := newMirror(w, stream, cfg)
	go m.run(bucket)
	return m
}

func newMirror[T, P any](w jetstream.KeyWatcher, stream jetstream.Stream, cfg MirrorConfig[T, P]) *Mirror[T, P] {
	return &Mirror[T, P]{items: map[string]mirrorEntry[P]{}, ready: make(chan struct{}), watcher: w, stream: stream, cfg: cfg, changed: make(chan struct{})}
}

func (m *Mirror[T, P]) run(bucket string) {
	readyOnce := sync.OnceFunc(func() { close(m.ready) })
	defer readyOnce()
	for e := range m.watcher.Updates() {
		if e == nil {
			// The watcher sends nil once it has delivered every current value.
			readyOnce()
			continue
		}
		m.apply(bucket, e)
		seq, source := e.Revision(), ""
		if ke, ok := e.(*kvEntry); ok {
			seq, source = ke.seq, ke.source
		}
		m.advance(seq, source, e.Revision())
	}
}

func (m *Mirror[T, P]) advance(seq uint64, source string, rev uint64) {
	m.mu.Lock()
	if m.own != nil && source == m.own.CachedInfo().Config.Name && rev > m.ownSeen {
		m.ownSeen = rev
	}
	if seq <= m.seen {
		m.mu.Unlock()
		return
	}
	m.seen = seq
	ch := m.changed
	m.changed = make(chan struct{})
	m.mu.Unlock()
	close(ch)
}

// WaitRevision waits until the mirror has applied key's write of revision
// rev (or a later one): a write this process learned of from elsewhere
// (another service's answer) is then in the mirror, without asking the
// server.
func (m *Mirror[T, P]) WaitRevision(ctx context.Context, key string, rev uint64) error {
	return m.waitUntil(ctx, func() bool {
		if m.own == nil {
			// A bucket's revisions are its stream's sequences.
			return m.seen >= rev
		}
		e, ok := m.items[key]
		return ok && e.rev >= rev
	})
}

// waitUntil waits until done, asked under the mirror's read lock, holds.
func (m *Mirror[T, P]) waitUntil(ctx context.Context, done func() bool) error {
	for {
		m.mu.RLock()
		ok, ch := done(), m.changed
		m.mu.RUnlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (m *Mirror[T, P]) apply(bucket string, e jetstream.KeyValueEntry) {
	key := e.Key()
	if e.Operation() != jetstream.KeyValuePut {
		m.remove(key, e.Revision())
		return
	}
	// This process's own writes were applied already; do not decode them again.
	m.mu.RLock()
	cur, held := m.items[key]
	m.mu.RUnlock()
	if held && cur.rev >= e.Revision() {
		return
	}
	v := new(T)
	if err := json.Unmarshal(e.Value(), v); err != nil {
		m.cfg.Logger.Error().Err(err).Str("bucket", bucket).Str("key", key).Msg("undecodable record skipped")
		return
	}
	m.Apply(key, v, e.Revision())
}

// Apply records a write this process just made, so its own reads see it
// without waiting for the watch. Older revisions than the one held are ignored.
func (m *Mirror[T, P]) Apply(key string, v *T, rev uint64) {
	p, keep := m.cfg.Project(key, v, rev)
	if !keep {
		m.remove(key, rev)
		return
	}
	m.mu.Lock()
	if cur, ok := m.items[key]; ok && cur.rev >= rev {
		m.mu.Unlock()
		return
	}
	m.items[key] = mirrorEntry[P]{val: p, rev: rev}
	m.mu.Unlock()
	if m.cfg.OnChange != nil {
		m.cfg.OnChange(key, &p)
	}
}

func (m *Mirror[T, P]) remove(key string, rev uint64) {
	m.mu.Lock()
	cur, ok := m.items[key]
	if !ok || cur.rev > rev {
		m.mu.Unlock()
		return
	}
	delete(m.items, key)
	m.mu.Unlock()
	if m.cfg.OnChange != nil {
		m.cfg.OnChange(key, nil)
	}
}

// WaitReady blocks until the initial contents are loaded or ctx ends.
func (m *Mirror[T, P]) WaitReady(ctx context.Context) error {
	select {
	case <-m.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Get returns the projection of key.
func (m *Mirror[T, P]) Get(key string) (P, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	e, ok := m.items[key]
	return e.val, ok
}

// Len returns the number of keys held.
func (m *Mirror[T, P]) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.items)
}

// Range calls fn for every key until fn returns false. fn must not call back
// into the mirror.
func (m *Mirror[T, P]) Range(fn func(key string, p P) bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for k, e := range m.items {
		if !fn(k, e.val) {
			return
		}
	}
}

// Stop ends the watch.
func (m *Mirror[T, P]) Stop() error { return m.watcher.Stop() }

// Identity is a Project function that keeps the whole record.
func Identity[T any](_ string, v *T, _ uint64) (*T, bool) { return v, true }
