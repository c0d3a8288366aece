// Package listing answers a service's list operations over a bucket whose
// records it keeps whole (webhooks, consumer credentials): every record
// the keys match, as its public view, ordered by id.
package listing

import (
	"context"
	"sort"

	"github.com/a2amesh/a2amesh/bus"
)

// All returns the view of every record of store under the keys filter
// matches (jetstream.AllKeys for the whole bucket), ordered by id. A
// record that can no longer be read (deleted since it was listed) is left
// out; the list is empty, never nil, when there are none.
func All[T, V any](ctx context.Context, store *bus.Records[T], filter string, view func(*T) V, id func(*V) string) ([]V, error) {
	lister, err := store.KV().ListKeysFiltered(ctx, filter)
	if err != nil {
		return nil, err
	}
	out := []V{}
	for key := range lister.Keys() {
		rec, _, err := store.Get(ctx, key)
		if err != nil {
			continue
		}
		out = append(out, view(rec))
	}
	sort.Slice(out, func(i, j int) bool { return id(&out[i]) < id(&out[j]) })
	return out, nil
}
