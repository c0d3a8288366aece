package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// originRegion is the region holding the records every region reads: the
// cluster of the agents bucket's stream ("" on a server in no cluster). A
// stream's info is answered by the stream itself, not the meta leader.
func originRegion(ctx context.Context, js jetstream.JetStream) (string, error) {
	s, err := js.Stream(ctx, "KV_"+BucketAgents)
	if err != nil {
		return "", fmt.Errorf("where the global records live: %w", err)
	}
	if c := s.CachedInfo().Cluster; c != nil && c.Name != "" && connRegion(js) != "" {
		return c.Name, nil
	}
	return connRegion(js), nil
}

// regionBucket is the bucket a service of the connection's region uses for
// bucket: for a regional bucket outside the origin region, the region's own
// (RegionBucket); otherwise bucket itself. The choice is never a guess: a
// region that used another region's bucket would split its runs between
// the two, so an origin that cannot be told is an error.
func regionBucket(ctx context.Context, js jetstream.JetStream, bucket string) (string, error) {
	region := connRegion(js)
	if region == "" || !IsRegionalBucket(bucket) {
		return bucket, nil
	}
	origin, err := originRegion(ctx, js)
	if err != nil {
		return "", err
	}
	if origin == region {
		return bucket, nil
	}
	return RegionBucket(bucket, region), nil
}

// eventRegion is the region token of the events a connection's services
// publish (RegionEventSubject): its region, or DefaultRegion on a server in
// no cluster.
func eventRegion(js jetstream.JetStream) string {
	if r := connRegion(js); r != "" {
		return r
	}
	return DefaultRegion
}

// regionEventStream names the event stream that captures the events of the
// connection's region: EventStream in the origin region (and on a server in
// no cluster), RegionEventStream elsewhere.
func regionEventStream(ctx context.Context, js jetstream.JetStream) (string, error) {
	region := connRegion(js)
	if region == "" {
		return EventStream, nil
	}
	origin, err := originRegion(ctx, js)
	if err != nil {
		return "", err
	}
	if origin == region {
		return EventStream, nil
	}
	return RegionEventStream(region), nil
}
