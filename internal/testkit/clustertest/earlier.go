package clustertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// EarlierLayout keeps the global buckets of a supercluster as versions
// before records owned per region kept them, for tests of the upgrade:
// each in the origin region, mirrored to every other region under
// bus.RegionBucket. It returns a JetStream context of the origin, whose
// buckets take records as those versions wrote them.
func (sc *Supercluster) EarlierLayout(t testing.TB, origin string) jetstream.JetStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, js := sc.Connect(origin, 0)
	for _, stream := range bus.ProvisionedStreams() {
		bucket, ok := strings.CutPrefix(stream, "KV_")
		if !ok || !bus.IsGlobalBucket(bucket) {
			continue
		}
		if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, Placement: &jetstream.Placement{Cluster: origin}}); err != nil {
			t.Fatalf("clustertest: bucket %s: %v", bucket, err)
		}
		for _, region := range sc.Regions() {
			if region == origin {
				continue
			}
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "KV_" + bus.RegionBucket(bucket, region),
				Mirror: &jetstream.StreamSource{Name: "KV_" + bucket}, MirrorDirect: true, AllowDirect: true, MaxMsgsPerSubject: 1,
				Placement: &jetstream.Placement{Cluster: region}}); err != nil {
				t.Fatalf("clustertest: mirror of %s in %s: %v", bucket, region, err)
			}
		}
	}
	return js
}
