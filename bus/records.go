package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/jetstream"
)

// Records is a typed view of a key-value bucket whose values are JSON records.
// Every write states the revision it expects, so concurrent writers never both
// win (compare-and-set on the record's revision).
type Records[T any] struct {
	kv   jetstream.KeyValue
	name string
}

// OpenRecords binds to an existing bucket.
func OpenRecords[T any](ctx context.Context, js jetstream.JetStream, bucket string) (*Records[T], error) {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", bucket, err)
	}
	return &Records[T]{kv: kv, name: bucket}, nil
}

// KV returns the underlying bucket.
func (r *Records[T]) KV() jetstream.KeyValue { return r.kv }

// Get returns the record and its revision, or mesh NOT_FOUND.
func (r *Records[T]) Get(ctx context.Context, key string) (*T, uint64, error) {
	e, err := r.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrInvalidKey) {
		return nil, 0, mesh.ErrNotFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("get %s/%s: %w", r.name, key, err)
	}
	v := new(T)
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return nil, 0, fmt.Errorf("decode %s/%s: %w", r.name, key, err)
	}
	return v, e.Revision(), nil
}

// Create stores a new record; an existing key is mesh CONFLICT.
func (r *Records[T]) Create(ctx context.Context, key string, v *T) (uint64, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("encode %s/%s: %w", r.name, key, err)
	}
	rev, err := r.kv.Create(ctx, key, data)
	if errors.Is(err, jetstream.ErrKeyExists) {
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
	next, err := r.kv.Update(ctx, key, data, rev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
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
	rev, err := r.kv.Put(ctx, key, data)
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
	err := r.kv.Delete(ctx, key, opts...)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isWrongLastSeq(err) {
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
		v, rev, err := r.Get(ctx, key)
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
