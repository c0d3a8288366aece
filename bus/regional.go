package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// originRegion is the region holding the records every region reads: the
// cluster of the agents bucket's stream ("" on a server in no cluster). A
// stream's info is answered by the stream itself, not the meta leader.
func originRegion(ctx context.Context, js jetstream.JetStream) (string, error) {
	if o, ok := origins.Load(js.Conn()); ok {
		return o.(string), nil
	}
	s, err := js.Stream(ctx, "KV_"+BucketAgents)
	if err != nil {
		return "", fmt.Errorf("where the global records live: %w", err)
	}
	origin := connRegion(js)
	if c := s.CachedInfo().Cluster; c != nil && c.Name != "" && origin != "" {
		origin = c.Name
	}
	if js.Conn() != nil {
		origins.Store(js.Conn(), origin)
	}
	return origin, nil
}

// origins remembers each connection's origin region once told: the agents
// bucket never moves, and services that read another region's buckets ask
// on every request.
var origins sync.Map // *nats.Conn -> string

// forgetOrigin drops what is remembered of nc's origin region, when nc is
// closed for good.
func forgetOrigin(nc *nats.Conn) { origins.Delete(nc) }

// outsideOrigin says whether region ("": the connection's) keeps its own
// regional buckets and event stream under its name: whether it is not the
// origin. On a server in no cluster everything is the origin's. The answer
// is never a guess: a region that used another region's bucket would split
// its runs between the two, so an origin that cannot be told is an error.
func outsideOrigin(ctx context.Context, js jetstream.JetStream, region string) (string, bool, error) {
	if connRegion(js) == "" {
		return "", false, nil
	}
	if region == "" {
		region = connRegion(js)
	}
	origin, err := originRegion(ctx, js)
	if err != nil {
		return "", false, err
	}
	return region, region != origin, nil
}

// BucketIn names region's own bucket of a regional bucket (or object
// store): bucket itself in the origin region (and on a server in no
// cluster), RegionBucket elsewhere; region "" is the connection's. A bucket
// that is not regional is named as it is.
func BucketIn(ctx context.Context, js jetstream.JetStream, bucket, region string) (string, error) {
	if !IsRegionalBucket(bucket) {
		return bucket, nil
	}
	region, outside, err := outsideOrigin(ctx, js, region)
	if err != nil || !outside {
		return bucket, err
	}
	return RegionBucket(bucket, region), nil
}

// OwnBucket names the bucket (or object store) the services of the
// connection's region use for bucket (BucketIn of their region).
func OwnBucket(ctx context.Context, js jetstream.JetStream, bucket string) (string, error) {
	return BucketIn(ctx, js, bucket, "")
}

// EventStreamIn names the event stream that stores the events region's
// services publish ("": the connection's region's): EventStream in the
// origin region (and on a server in no cluster), RegionEventStream
// elsewhere. The events of an agent's runs are stored in its home region's.
func EventStreamIn(ctx context.Context, js jetstream.JetStream, region string) (string, error) {
	region, outside, err := outsideOrigin(ctx, js, region)
	if err != nil || !outside {
		return EventStream, err
	}
	return RegionEventStream(region), nil
}

// ReadersEventStream names the event stream a durable reader of one agent's
// events (a webhook, a consumer credential) reads: that of the agent's home
// region (EventStreamIn), where its events are stored first, so reading
// them needs that region alone. An agent homed in a region that keeps no
// event stream yet (no services run there) is read from the gathered log,
// EventStream, which holds every region's events once it sources them.
func ReadersEventStream(ctx context.Context, js jetstream.JetStream, home string) (string, error) {
	name, err := EventStreamIn(ctx, js, home)
	if err != nil || name == EventStream {
		return name, err
	}
	if _, err := js.Stream(ctx, name); errors.Is(err, jetstream.ErrStreamNotFound) {
		return EventStream, nil
	} else if err != nil {
		return "", fmt.Errorf("event stream of region %s: %w", home, err)
	}
	return name, nil
}

// EventStreamRegion names the region that keeps an event stream: region for
// RegionEventStream(region), the origin for EventStream ("" on a server in
// no cluster, where everything is the origin's). What is kept beside a
// stream's readers (a webhook's deliveries) is kept in that region.
func EventStreamRegion(ctx context.Context, js jetstream.JetStream, stream string) (string, error) {
	if region, ok := strings.CutPrefix(stream, EventStream+"_"); ok {
		return region, nil
	}
	if connRegion(js) == "" {
		return "", nil
	}
	return originRegion(ctx, js)
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

// RegionStream is the event stream of one region as a reader of every
// agent's events reads it: each region's events where they are stored
// first, so the reader goes on with the regions that are up while another
// is down, the origin included.
type RegionStream struct {
	// Region is the region ("" on a server in no cluster).
	Region string `json:"region"`
	// Stream is its event stream.
	Stream string `json:"stream"`
	// SkipSourced is set for the origin's stream, EventStream, which also
	// holds copies of the other regions' events (they carry SourcedHeader):
	// a reader of each region's stream skips them there.
	SkipSourced bool `json:"skip_sourced,omitempty"`
}

// IsSourced says whether a stored event is a copy of another region's
// event, in the origin's gathered log.
func IsSourced(h nats.Header) bool { return h.Get(SourcedHeader) != "" }

// RegionStreams names the event streams of regions (those keeping one; a
// region whose services never ran keeps none), the connection's region
// first. On a server in no cluster it is EventStream alone.
func RegionStreams(ctx context.Context, js jetstream.JetStream, regions []string) ([]RegionStream, error) {
	own := connRegion(js)
	if own == "" {
		return []RegionStream{{Stream: EventStream}}, nil
	}
	var out []RegionStream
	seen := map[string]bool{}
	for _, region := range append([]string{own}, regions...) {
		if seen[region] || ValidRegion(region) != nil {
			continue
		}
		seen[region] = true
		name, err := EventStreamIn(ctx, js, region)
		if err != nil {
			return nil, err
		}
		if name != EventStream && region != own {
			if _, err := js.Stream(ctx, name); errors.Is(err, jetstream.ErrStreamNotFound) {
				continue
			}
			// A stream that does not answer is listed: its reader says
			// the region is unreachable.
		}
		out = append(out, RegionStream{Region: region, Stream: name, SkipSourced: name == EventStream})
	}
	return out, nil
}
