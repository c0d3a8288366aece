package meshtest

import (
	"context"
	"testing"
	"time"
)

// KeyCount counts the keys of a key-value bucket straight from the bus, for
// tests that check what a request did or did not write.
func (p *Platform) KeyCount(t testing.TB, bucket string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := p.Conn().JS.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatalf("bucket %s: %v", bucket, err)
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		t.Fatalf("bucket %s: %v", bucket, err)
	}
	n := 0
	for range keys.Keys() {
		n++
	}
	_ = keys.Stop()
	return n
}
