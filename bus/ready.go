package bus

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Readiness of a platform process is about its own region: it is ready
// while its region's servers answer and every stream, bucket and object
// store its region keeps is there, whatever happens elsewhere. What it
// reads from other regions (the origin's global records, webhook
// deliveries and gathered event log; another region's agents' runs) is
// reported as degraded when it does not answer, never as not ready: one
// region's outage must not take every region's processes out of their load
// balancers (docs/architecture.md, "Regions").

// remoteCheckTimeout bounds the check of another region's stream, so a
// region that does not answer costs a readiness probe no more than this.
const remoteCheckTimeout = time.Second

// Readiness is what CheckReady found.
type Readiness struct {
	// Err says why this process cannot serve its region: a stream of its
	// own region is missing or does not answer. Nil when ready.
	Err error
	// Unreachable maps each other region that does not answer to what
	// was found: a stream of it this process reads, or a request handed
	// there (CallRegion). Degraded, not unready.
	Unreachable map[string]string
}

// UnreachableRegions lists the regions of Unreachable, sorted.
func (r Readiness) UnreachableRegions() []string {
	names := make([]string, 0, len(r.Unreachable))
	for name := range r.Unreachable {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// streamCheck is one stream readiness asks: of this region (region "") or
// of another.
type streamCheck struct {
	name, region string
}

// CheckReady asks each stream the connection's region keeps (its own
// buckets, its mirrors of the global ones, its event stream and object
// store), and, outside the origin, the origin's streams it reads. It asks
// the streams themselves, never the meta leader, which a supercluster may
// lack while a region is down.
func CheckReady(ctx context.Context, js jetstream.JetStream) Readiness {
	checks, err := readinessChecks(ctx, js)
	if err != nil {
		return Readiness{Err: err}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var missing, failed []string
	unreachable := map[string]string{}
	for _, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := ctx, context.CancelFunc(func() {})
			if c.region != "" {
				cctx, cancel = context.WithTimeout(ctx, remoteCheckTimeout)
			}
			defer cancel()
			_, err := js.Stream(cctx, c.name)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
			case c.region != "":
				if _, seen := unreachable[c.region]; !seen {
					unreachable[c.region] = fmt.Sprintf("stream %s: %v", c.name, err)
				}
			case errors.Is(err, jetstream.ErrStreamNotFound):
				missing = append(missing, c.name)
			default:
				failed = append(failed, fmt.Sprintf("stream %s: %v", c.name, err))
			}
		}()
	}
	wg.Wait()
	if js.Conn() != nil {
		for _, region := range UnreachableRegions(js.Conn()) {
			if _, seen := unreachable[region]; !seen {
				unreachable[region] = "a request handed there found nothing answering"
			}
		}
	}
	r := Readiness{}
	if len(unreachable) > 0 {
		r.Unreachable = unreachable
	}
	sort.Strings(missing)
	sort.Strings(failed)
	switch {
	case len(failed) > 0:
		r.Err = errors.New(strings.Join(failed, "; "))
	case len(missing) > 0:
		r.Err = fmt.Errorf("missing streams: %s", strings.Join(missing, ", "))
	}
	return r
}

// readinessChecks lists the streams CheckReady asks.
func readinessChecks(ctx context.Context, js jetstream.JetStream) ([]streamCheck, error) {
	region := connRegion(js)
	var checks []streamCheck
	if region == "" {
		for _, name := range ProvisionedStreams() {
			checks = append(checks, streamCheck{name: name})
		}
		return checks, nil
	}
	origin, err := readinessOrigin(ctx, js)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("missing streams: KV_%s", BucketAgents)
	}
	// This region's owned buckets of the global records (see owned.go).
	for _, kc := range bucketConfigs(DefaultEventRetention) {
		if IsOwnedBucket(kc.Bucket) {
			checks = append(checks, streamCheck{name: "KV_" + OwnerBucket(kc.Bucket, region)})
		}
	}
	if err == nil && origin == region {
		for _, name := range ProvisionedStreams() {
			checks = append(checks, streamCheck{name: name})
		}
		return checks, nil
	}
	if err != nil {
		// The origin is not this region (its streams would answer) and
		// cannot be told: its streams are checked under that name.
		origin = "origin"
	}
	for _, name := range ProvisionedStreams() {
		bucket, isBucket := strings.CutPrefix(name, "KV_")
		switch {
		case name == EventStream:
			checks = append(checks, streamCheck{name: RegionEventStream(region)},
				streamCheck{name: EventStream, region: origin})
		case name == ObjectStream(ObjectArtifacts):
			checks = append(checks, streamCheck{name: ObjectStream(RegionBucket(ObjectArtifacts, region))})
		case isBucket && (IsGlobalBucket(bucket) || IsRegionalBucket(bucket)):
			// This region's aggregate of an owned bucket, its mirror of
			// the settings, or its own part of a regional bucket.
			checks = append(checks, streamCheck{name: "KV_" + RegionBucket(bucket, region)})
			if bucket == BucketAgents {
				checks = append(checks, streamCheck{name: name, region: origin})
			}
		default:
			// Kept once, in the origin.
			checks = append(checks, streamCheck{name: name, region: origin})
		}
	}
	return checks, nil
}

// readinessOrigin is the origin region as the connection remembers it, or
// as the agents bucket's stream says within remoteCheckTimeout.
func readinessOrigin(ctx context.Context, js jetstream.JetStream) (string, error) {
	if js.Conn() != nil {
		if o, ok := origins.Load(js.Conn()); ok {
			return o.(string), nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, remoteCheckTimeout)
	defer cancel()
	return originRegion(ctx, js)
}
