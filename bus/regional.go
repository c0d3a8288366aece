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

// outsideOrigin names the connection's region and says whether it is not
// the origin: such a region keeps its own regional buckets and event
// stream under its name. On a server in no cluster, region is "" and
// everything is the origin's. The answer is never a guess: a region that
// used another region's bucket would split its runs between the two, so an
// origin that cannot be told is an error.
func outsideOrigin(ctx context.Context, js jetstream.JetStream) (region string, outside bool, err error) {
	region = connRegion(js)
	if region == "" {
		return "", false, nil
	}
	origin, err := originRegion(ctx, js)
	if err != nil {
		return "", false, err
	}
	return region, origin != region, nil
}

// regionBucket is the bucket a service of the connection's region uses for
// bucket: for a regional bucket outside the origin region, the region's own
// (RegionBucket); otherwise bucket itself.
func regionBucket(ctx context.Context, js jetstream.JetStream, bucket string) (string, error) {
	if !IsRegionalBucket(bucket) {
		return bucket, nil
	}
	region, outside, err := outsideOrigin(ctx, js)
	if err != nil || !outside {
		return bucket, err
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
	region, outside, err := outsideOrigin(ctx, js)
	if err != nil || !outside {
		return EventStream, err
	}
	return RegionEventStream(region), nil
}
