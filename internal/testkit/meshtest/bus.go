package meshtest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
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

// HoldAgentViews pauses every consumer of the agents' streams, so that the
// services' views of the agents stop following the bucket, and returns
// what resumes them (also done when the test ends). The server delivers
// to a resumed consumer once the stream has a new message, so resuming
// also creates an agent.
func (p *Platform) HoldAgentViews(t testing.TB) (resume func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js := p.Conn().JS
	type held struct{ stream, consumer string }
	var all []held
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		if !strings.Contains(name, bus.BucketAgents) {
			continue
		}
		stream, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		consumers := stream.ConsumerNames(ctx)
		for c := range consumers.Name() {
			if _, err := js.PauseConsumer(ctx, name, c, time.Now().Add(time.Minute)); err != nil {
				t.Fatalf("pause consumer %s of %s: %v", c, name, err)
			}
			all = append(all, held{name, c})
		}
	}
	if len(all) == 0 {
		t.Fatal("no consumer of the agents' streams to pause")
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, h := range all {
				if _, err := js.ResumeConsumer(ctx, h.stream, h.consumer); err != nil {
					t.Errorf("resume consumer %s of %s: %v", h.consumer, h.stream, err)
				}
			}
			p.CreateAgent("after-the-views-resumed")
		})
	}
	t.Cleanup(resume)
	return resume
}
