package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/jetstream"
)

// localMirror finds this region's mirror of a global bucket (see
// RegionBucket), if the connection's region has one.
func localMirror(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.Stream, bool) {
	region := connRegion(js)
	if region == "" || !IsGlobalBucket(bucket) {
		return nil, false
	}
	s, err := js.Stream(ctx, "KV_"+RegionBucket(bucket, region))
	if err != nil {
		return nil, false
	}
	return s, true
}

// mirrorCatchUp bounds how long a watch waits for a mirror created a moment
// ago to copy what its origin holds.
const mirrorCatchUp = 10 * time.Second

// catchUp waits, for at most mirrorCatchUp, until the mirror holds every
// write its origin had when asked: a mirror created a moment ago is still
// copying, and a view started on it would begin without records that
// exist. An origin that cannot be reached is not waited for: the view
// starts from what the mirror has.
func catchUp(ctx context.Context, js jetstream.JetStream, bucket string, mirror jetstream.Stream) {
	ctx, cancel := context.WithTimeout(ctx, mirrorCatchUp)
	defer cancel()
	origin, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return
	}
	target := origin.CachedInfo().State.LastSeq
	for {
		info, err := mirror.Info(ctx)
		if err == nil && info.State.LastSeq >= target {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// mirrorWatcher watches a bucket through a mirror of it, as a key watcher
// does through the bucket itself: the current value of every key, then nil,
// then every change. The client's own watch cannot read a mirror (it looks
// for the mirror's name in the subjects, which keep the origin's).
type mirrorWatcher struct {
	bucket  string
	updates chan jetstream.KeyValueEntry
	cc      jetstream.ConsumeContext
	stop    sync.Once
	done    chan struct{}
}

// watchMirror starts watching bucket's records in the mirror stream.
func watchMirror(ctx context.Context, js jetstream.JetStream, bucket string, mirror jetstream.Stream) (*mirrorWatcher, error) {
	catchUp(ctx, js, bucket, mirror)
	return watchStream(ctx, js, bucket, mirror, ">", false)
}

// watchAggregate starts watching the records of an aggregate of owned
// buckets (see owned.go), each given at its revision in its owner's
// bucket, once the aggregate has copied what its sources hold.
func watchAggregate(ctx context.Context, js jetstream.JetStream, agg string, stream jetstream.Stream) (*mirrorWatcher, error) {
	catchUpSources(ctx, stream)
	return watchStream(ctx, js, agg, stream, ">", true)
}

// catchUpSources waits, for at most mirrorCatchUp, until an aggregate has
// copied what each of its sources that answers holds.
func catchUpSources(ctx context.Context, stream jetstream.Stream) {
	ctx, cancel := context.WithTimeout(ctx, mirrorCatchUp)
	defer cancel()
	for {
		info, err := stream.Info(ctx)
		if err == nil && !slices.ContainsFunc(info.Sources, func(s *jetstream.StreamSourceInfo) bool { return s.Active >= 0 && s.Lag > 0 }) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// watchStream watches the records of bucket (the name its subjects carry)
// in stream whose keys match keys (">" for every key); owned: each entry's
// revision is the one in the owned bucket it was copied from.
func watchStream(ctx context.Context, js jetstream.JetStream, bucket string, mirror jetstream.Stream, keys string, owned bool) (*mirrorWatcher, error) {
	info, err := mirror.Info(ctx)
	if err != nil {
		return nil, err
	}
	prefix := "$KV." + bucket + "."
	cons, err := js.OrderedConsumer(ctx, info.Config.Name, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{prefix + keys},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
	})
	if err != nil {
		return nil, err
	}
	w := &mirrorWatcher{bucket: bucket, updates: make(chan jetstream.KeyValueEntry, 256), done: make(chan struct{})}
	initial := info.State.Msgs > 0
	if initial && keys != ">" {
		// The stream holds records, but maybe none of these keys.
		_, err := mirror.GetLastMsgForSubject(ctx, prefix+keys)
		initial = err == nil
	}
	if !initial {
		w.updates <- nil
	}
	w.cc, err = cons.Consume(func(msg jetstream.Msg) {
		md, err := msg.Metadata()
		if err != nil {
			return
		}
		e := &kvEntry{bucket: bucket, key: strings.TrimPrefix(msg.Subject(), prefix), value: msg.Data(),
			rev: md.Sequence.Stream, seq: md.Sequence.Stream, created: md.Timestamp, delta: md.NumPending, op: jetstream.KeyValuePut}
		if owned {
			if src, seq := sourceOf(msg.Headers()); seq > 0 {
				e.rev, e.source = seq, src
			}
		}
		switch msg.Headers().Get("KV-Operation") {
		case "DEL":
			e.op = jetstream.KeyValueDelete
		case "PURGE":
			e.op = jetstream.KeyValuePurge
		}
		select {
		case w.updates <- e:
		case <-w.done:
			return
		}
		if initial && md.NumPending == 0 {
			initial = false
			select {
			case w.updates <- nil:
			case <-w.done:
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("watch mirror %s: %w", info.Config.Name, err)
	}
	return w, nil
}

// Updates delivers the entries; it is closed by Stop.
func (w *mirrorWatcher) Updates() <-chan jetstream.KeyValueEntry { return w.updates }

// Stop ends the watch.
func (w *mirrorWatcher) Stop() error {
	w.stop.Do(func() {
		close(w.done)
		w.cc.Stop()
		go func() {
			<-w.cc.Closed()
			close(w.updates)
		}()
	})
	return nil
}

// kvEntry is one record version read from a mirror.
type kvEntry struct {
	bucket, key string
	value       []byte
	rev, delta  uint64
	// seq is the entry's sequence in the stream watched; source, for an
	// aggregate's entry, the owned bucket's stream it was copied from.
	seq     uint64
	source  string
	created time.Time
	op      jetstream.KeyValueOp
}

func (e *kvEntry) Bucket() string                  { return e.bucket }
func (e *kvEntry) Key() string                     { return e.key }
func (e *kvEntry) Value() []byte                   { return e.value }
func (e *kvEntry) Revision() uint64                { return e.rev }
func (e *kvEntry) Created() time.Time              { return e.created }
func (e *kvEntry) Delta() uint64                   { return e.delta }
func (e *kvEntry) Operation() jetstream.KeyValueOp { return e.op }

// The platform's settings (BucketConfig) are kept once, in the origin, and
// mirrored to every other region: ReadSetting and WatchSetting read this
// region's mirror where there is one, so a process of a region starts
// and checks the owner credential while the origin is down. Settings are
// written in the origin (the first start makes them).

// ReadSetting reads one setting: from this region's mirror of the settings
// where there is one, else from the settings bucket. mesh.ErrNotFound when
// it is not set (or not copied here yet).
func ReadSetting(ctx context.Context, js jetstream.JetStream, key string) ([]byte, error) {
	if mirror, ok := localMirror(ctx, js, BucketConfig); ok {
		m, err := mirror.GetLastMsgForSubject(ctx, "$KV."+BucketConfig+"."+key)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			return nil, mesh.ErrNotFound
		case err != nil:
			return nil, err
		}
		if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			return nil, mesh.ErrNotFound
		}
		return m.Data, nil
	}
	kv, err := js.KeyValue(ctx, BucketConfig)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, mesh.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return e.Value(), nil
}

// WatchSetting watches one setting as a key watcher does: its value (if
// set), then nil, then each change; through this region's mirror of the
// settings where there is one. The watch outlives ctx; Stop ends it.
func WatchSetting(ctx context.Context, js jetstream.JetStream, key string) (jetstream.KeyWatcher, error) {
	if mirror, ok := localMirror(ctx, js, BucketConfig); ok {
		return watchStream(context.WithoutCancel(ctx), js, BucketConfig, mirror, key, false)
	}
	kv, err := js.KeyValue(ctx, BucketConfig)
	if err != nil {
		return nil, err
	}
	return kv.Watch(context.WithoutCancel(ctx), key)
}
