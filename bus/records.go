package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Records is a typed view of a key-value bucket whose values are JSON records.
// Every write states the revision it expects, so concurrent writers never both
// win (compare-and-set on the record's revision).
//
// Get reads through the bucket's stream leader: on a replicated bucket a
// direct get may be answered by a replica that has not applied the latest
// write yet, and a decision taken on it (a claim, a "not found", a
// compare-and-set) would be wrong. The exceptions are the global records:
// the settings read outside their origin region, from that region's mirror
// (see OpenRecords), and, on a server in a cluster, the records owned per
// region (owned.go), read from this region's own bucket, then from its
// aggregate of every region's, and changed in their owner's bucket, where
// Latest and Modify read them. Peek is the cheaper read that may be a
// moment old, for lists and cards. Every call rides out a leader election
// (see retry.go).
type Records[T any] struct {
	kv   jetstream.KeyValue
	name string
	nc   *nats.Conn
	// msgGet is the JetStream API subject of a leader's message get of the
	// bucket's stream; empty when the bucket has one replica, whose direct
	// get is the truth (and this region has no mirror of it).
	msgGet string
	// local: Get reads this region's mirror of the bucket (Modify still
	// reads the origin, whose revision its compare-and-set needs).
	local bool
	// owned, for a global bucket whose records are owned per region (see
	// owned.go): reads go to this region's owned bucket and aggregate,
	// changes to the owner's bucket.
	owned *ownedStore
}

// OpenRecords binds to an existing bucket (this region's own, for a
// regional bucket).
func OpenRecords[T any](ctx context.Context, js jetstream.JetStream, bucket string) (*Records[T], error) {
	return OpenRecordsIn[T](ctx, js, bucket, "")
}

// OpenRecordsIn binds to region's own bucket of a regional bucket (see
// IsRegionalBucket; "": this connection's region's): for a service that
// serves an agent of another region itself, reading and writing where the
// agent's home region keeps it.
func OpenRecordsIn[T any](ctx context.Context, js jetstream.JetStream, bucket, region string) (*Records[T], error) {
	r := &Records[T]{name: bucket, nc: js.Conn()}
	if IsOwnedBucket(bucket) && ownedLayout(ctx, js) {
		err := retry(ctx, "open bucket "+bucket, func(ctx context.Context) error {
			var err error
			r.owned, err = openOwned(ctx, js, bucket)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("open bucket %s: %w", bucket, err)
		}
		r.kv = r.owned.aggKV
		return r, nil
	}
	var stream jetstream.Stream
	err := retry(ctx, "open bucket "+bucket, func(ctx context.Context) error {
		var err error
		if bucket, err = BucketIn(ctx, js, r.name, region); err != nil {
			return err
		}
		if r.kv, err = js.KeyValue(ctx, bucket); err != nil {
			return err
		}
		stream, err = js.Stream(ctx, "KV_"+bucket)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", bucket, err)
	}
	r.name = bucket
	// Outside its origin region, a global bucket is read from the region's
	// mirror (a direct get its mirror answers): a record written in another
	// region a moment ago may be missing there for as long as the gateway
	// takes to carry it, which is the price of reads that stay in the
	// region and go on while the origin is down. Writes, and their
	// compare-and-set, still go to the origin.
	_, r.local = localMirror(ctx, js, bucket)
	if r.local || stream.CachedInfo().Config.Replicas > 1 {
		r.msgGet = APIPrefix(js) + "STREAM.MSG.GET.KV_" + bucket
	}
	return r, nil
}

// RegionRecords opens each region's own bucket of a regional bucket (see
// IsRegionalBucket) once, for a service that reads and writes where an
// agent's home region keeps it.
type RegionRecords[T any] struct {
	js     jetstream.JetStream
	bucket string
	mu     sync.Mutex
	by     map[string]*Records[T]
}

// NewRegionRecords returns the region's buckets of bucket, opened as they
// are first asked for.
func NewRegionRecords[T any](js jetstream.JetStream, bucket string) *RegionRecords[T] {
	return &RegionRecords[T]{js: js, bucket: bucket, by: map[string]*Records[T]{}}
}

// In returns region's bucket ("": this connection's region's).
func (r *RegionRecords[T]) In(ctx context.Context, region string) (*Records[T], error) {
	r.mu.Lock()
	recs, ok := r.by[region]
	r.mu.Unlock()
	if ok {
		return recs, nil
	}
	recs, err := OpenRecordsIn[T](ctx, r.js, r.bucket, region)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if had, ok := r.by[region]; ok {
		return had, nil
	}
	r.by[region] = recs
	return recs, nil
}

// RecordsOf reads and writes the bucket of r with records of another type:
// for a bucket that keeps records of several kinds under different keys.
func RecordsOf[T, U any](r *Records[U]) *Records[T] {
	return &Records[T]{kv: r.kv, name: r.name, nc: r.nc, msgGet: r.msgGet, local: r.local, owned: r.owned}
}

// APIPrefix is the JetStream API prefix js sends its requests to, ending
// in a dot ("$JS.API.", or a domain's or an import's prefix).
func APIPrefix(js jetstream.JetStream) string {
	o := js.Options()
	switch {
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	}
	return jetstream.DefaultAPIPrefix
}

// KV returns the underlying bucket (for records owned per region, this
// region's aggregate of them: for lists and watches).
func (r *Records[T]) KV() jetstream.KeyValue { return r.kv }

// Get returns the record at its latest revision, or mesh NOT_FOUND; outside
// a global bucket's origin region, as this region's mirror has it.
func (r *Records[T]) Get(ctx context.Context, key string) (*T, uint64, error) {
	if r.local || r.owned != nil {
		return r.Peek(ctx, key)
	}
	return r.getLatest(ctx, key)
}

// Latest reads the record from its stream's leader, in the origin region
// for a global bucket: for a read whose revision a compare-and-set uses.
func (r *Records[T]) Latest(ctx context.Context, key string) (*T, uint64, error) {
	return r.getLatest(ctx, key)
}

// getLatest reads the record from its stream's leader.
func (r *Records[T]) getLatest(ctx context.Context, key string) (*T, uint64, error) {
	var data []byte
	var rev uint64
	remote := ""
	err := retry(ctx, "get "+r.name+"/"+key, func(ctx context.Context) error {
		var err error
		if r.owned != nil {
			data, rev, err = r.owned.read(ctx, key, true, &remote)
			return err
		}
		data, rev, err = r.latest(ctx, key)
		return err
	})
	return r.decode(key, data, rev, ownerDown(r.nc, remote, err))
}

// Peek returns the record as a replica has it, possibly a moment behind the
// latest revision, or mesh NOT_FOUND. For lists and cards, never for a
// decision.
func (r *Records[T]) Peek(ctx context.Context, key string) (*T, uint64, error) {
	var data []byte
	var rev uint64
	err := retry(ctx, "get "+r.name+"/"+key, func(ctx context.Context) error {
		var err error
		data, rev, err = r.direct(ctx, key)
		return err
	})
	return r.decode(key, data, rev, err)
}

func (r *Records[T]) decode(key string, data []byte, rev uint64, err error) (*T, uint64, error) {
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, 0, mesh.ErrNotFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("get %s/%s: %w", r.name, key, err)
	}
	v := new(T)
	if err := json.Unmarshal(data, v); err != nil {
		return nil, 0, fmt.Errorf("decode %s/%s: %w", r.name, key, err)
	}
	return v, rev, nil
}

// direct reads the key with the bucket's own get (a direct get where the
// bucket allows them).
func (r *Records[T]) direct(ctx context.Context, key string) ([]byte, uint64, error) {
	if r.owned != nil {
		var remote string
		return r.owned.read(ctx, key, false, &remote)
	}
	e, err := r.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrInvalidKey) {
		return nil, 0, mesh.ErrNotFound
	}
	if err != nil {
		return nil, 0, err
	}
	return e.Value(), e.Revision(), nil
}

// msgGetResponse is the JetStream API's answer to a message get.
type msgGetResponse struct {
	Error   *jetstream.APIError `json:"error"`
	Message *struct {
		Sequence uint64 `json:"seq"`
		Header   []byte `json:"hdrs"`
		Data     []byte `json:"data"`
	} `json:"message"`
}

// latest reads the key from the stream leader, which answers only with
// what it has applied, and applies every write before acknowledging it.
func (r *Records[T]) latest(ctx context.Context, key string) ([]byte, uint64, error) {
	if r.owned != nil {
		var remote string
		return r.owned.read(ctx, key, true, &remote)
	}
	if r.msgGet == "" {
		return r.direct(ctx, key)
	}
	if !validKey(key) {
		return nil, 0, mesh.ErrNotFound
	}
	req, _ := json.Marshal(map[string]string{"last_by_subj": "$KV." + r.name + "." + key})
	msg, err := r.nc.RequestWithContext(ctx, r.msgGet, req)
	if err != nil {
		return nil, 0, err
	}
	var resp msgGetResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, 0, fmt.Errorf("message get answer: %w", err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil, 0, mesh.ErrNotFound
		}
		return nil, 0, resp.Error
	}
	if resp.Message == nil {
		return nil, 0, jetstream.ErrInvalidJetStreamResponse
	}
	if len(resp.Message.Header) > 0 {
		hdr, err := nats.DecodeHeadersMsg(resp.Message.Header)
		if err != nil {
			return nil, 0, fmt.Errorf("message get headers: %w", err)
		}
		if op := hdr.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			return nil, 0, mesh.ErrNotFound
		}
	}
	return resp.Message.Data, resp.Message.Sequence, nil
}

// validKey is the bucket's rule for keys; a get of any other key finds nothing.
func validKey(key string) bool {
	if key == "" || key[0] == '.' || key[len(key)-1] == '.' || strings.Contains(key, "..") {
		return false
	}
	for _, c := range key {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-/_=.", c)) {
			return false
		}
	}
	return true
}

// write stores data with put, retrying through a leader election. When a
// try timed out (it may have been stored) and a later one is refused as a
// conflict, the record is read back: if it holds exactly data, the earlier
// try did the write and its revision is returned.
func (r *Records[T]) write(ctx context.Context, what, key string, data []byte, kind writeKind, in string, put func(ctx context.Context, kv jetstream.KeyValue) (uint64, error)) (uint64, error) {
	var rev uint64
	maybeDone := false
	remote := ""
	err := retry(ctx, what, func(ctx context.Context) error {
		kv, err := r.writer(ctx, key, kind, in, &remote)
		if err != nil {
			return err
		}
		rev, err = put(ctx, kv)
		if err != nil && maybeDone && conflictErr(err) {
			if cur, curRev, gerr := r.latest(ctx, key); gerr == nil && bytes.Equal(cur, data) {
				rev = curRev
				return nil
			}
		}
		if err != nil && !definitelyNotDone(err) {
			maybeDone = true
		}
		return err
	})
	return rev, ownerDown(r.nc, remote, err)
}

// writer is the bucket a change of key goes to: the bucket itself, or,
// for records owned per region, the owner's (its region in remote when it
// is another region's).
func (r *Records[T]) writer(ctx context.Context, key string, kind writeKind, in string, remote *string) (jetstream.KeyValue, error) {
	if r.owned == nil {
		return r.kv, nil
	}
	kv, region, err := r.owned.writer(ctx, key, kind, in)
	*remote = region
	return kv, err
}

func conflictErr(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isWrongLastSeq(err)
}

// Create stores a new record; an existing key is mesh CONFLICT. A record
// of a global bucket is owned by this region.
func (r *Records[T]) Create(ctx context.Context, key string, v *T) (uint64, error) {
	return r.CreateIn(ctx, "", key, v)
}

// CreateIn stores a new record owned by region ("": this one), for a
// record that belongs to a region (an agent, to its home): it is then
// changed there, while any other region is down. A region that keeps no
// records of its own (no services run there) leaves it to this one; a
// region that cannot be reached refuses it (mesh UNAVAILABLE naming it).
// Outside a global bucket, or on a server in no cluster, region is
// ignored.
func (r *Records[T]) CreateIn(ctx context.Context, region, key string, v *T) (uint64, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("encode %s/%s: %w", r.name, key, err)
	}
	rev, err := r.write(ctx, "create "+r.name+"/"+key, key, data, createRecord, region, func(ctx context.Context, kv jetstream.KeyValue) (uint64, error) {
		return kv.Create(ctx, key, data)
	})
	if conflictErr(err) || errors.Is(err, mesh.ErrConflict) {
		return 0, mesh.ErrConflict
	}
	if err != nil {
		return 0, fmt.Errorf("create %s/%s: %w", r.name, key, err)
	}
	return rev, nil
}

// Update stores v if the record is still at revision rev; otherwise mesh CONFLICT.
func (r *Records[T]) Update(ctx context.Context, key string, v *T, rev uint64) (uint64, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("encode %s/%s: %w", r.name, key, err)
	}
	next, err := r.write(ctx, "update "+r.name+"/"+key, key, data, changeRecord, "", func(ctx context.Context, kv jetstream.KeyValue) (uint64, error) {
		return kv.Update(ctx, key, data, rev)
	})
	if conflictErr(err) {
		return 0, mesh.ErrConflict
	}
	if err != nil {
		return 0, fmt.Errorf("update %s/%s: %w", r.name, key, err)
	}
	return next, nil
}

// Put stores v whatever the current revision.
func (r *Records[T]) Put(ctx context.Context, key string, v *T) (uint64, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("encode %s/%s: %w", r.name, key, err)
	}
	rev, err := r.write(ctx, "put "+r.name+"/"+key, key, data, putRecord, "", func(ctx context.Context, kv jetstream.KeyValue) (uint64, error) {
		return kv.Put(ctx, key, data)
	})
	if err != nil {
		return 0, fmt.Errorf("put %s/%s: %w", r.name, key, err)
	}
	return rev, nil
}

// Delete removes the record if it is still at revision rev (0: whatever the revision).
func (r *Records[T]) Delete(ctx context.Context, key string, rev uint64) error {
	var opts []jetstream.KVDeleteOpt
	if rev > 0 {
		opts = append(opts, jetstream.LastRevision(rev))
	}
	maybeDone := false
	remote := ""
	err := retry(ctx, "delete "+r.name+"/"+key, func(ctx context.Context) error {
		kv, err := r.writer(ctx, key, changeRecord, "", &remote)
		if err != nil {
			return err
		}
		err = kv.Delete(ctx, key, opts...)
		if err != nil && maybeDone && conflictErr(err) {
			// An earlier try that timed out may have deleted it.
			if _, _, gerr := r.latest(ctx, key); errors.Is(gerr, mesh.ErrNotFound) {
				return nil
			}
		}
		if err != nil && !definitelyNotDone(err) {
			maybeDone = true
		}
		return err
	})
	err = ownerDown(r.nc, remote, err)
	if conflictErr(err) {
		return mesh.ErrConflict
	}
	if err != nil {
		return fmt.Errorf("delete %s/%s: %w", r.name, key, err)
	}
	return nil
}

// ErrSkip, returned by a Modify function, leaves the record unchanged and makes
// Modify return the current record without error.
var ErrSkip = errors.New("bus: leave record unchanged")

// Modify reads the record, applies fn and writes it back with compare-and-set,
// retrying from a fresh read when another writer got there first. fn must be
// free of side effects: it may run more than once.
func (r *Records[T]) Modify(ctx context.Context, key string, fn func(v *T) error) (*T, uint64, error) {
	for attempt := 0; ; attempt++ {
		v, rev, err := r.getLatest(ctx, key)
		if err != nil {
			return nil, 0, err
		}
		if err := fn(v); errors.Is(err, ErrSkip) {
			return v, rev, nil
		} else if err != nil {
			return nil, 0, err
		}
		next, err := r.Update(ctx, key, v, rev)
		if errors.Is(err, mesh.ErrConflict) && attempt < 50 {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		return v, next, nil
	}
}

func isWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
	}
	return false
}
