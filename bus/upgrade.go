package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Upgrade moves a deployment of several regions whose global records are
// kept as an earlier version kept them (in the origin region, mirrored to
// every other region) to records owned per region (see owned.go):
//
//   - every region gets its owned bucket of each owned bucket, placed
//     there;
//   - each region's mirror of an owned bucket is replaced by its aggregate
//     (same name), and the origin's bucket becomes the origin's aggregate:
//     each sources every region's owned bucket;
//   - every record is copied to the bucket of its owner: an agent to its
//     home region's, any other record to the origin's, and the copy
//     replaces it in every aggregate;
//   - the agents bucket is marked, which Provision checks.
//
// Run it with every region's servers up and the platform's services
// stopped (they refuse to start on the earlier layout, ErrEarlierLayout).
// Each step is made only when missing, so a second run, or a run after one
// that stopped half way, does what is left: on an upgraded deployment it
// changes nothing. It returns what it did, one line a step.
func Upgrade(ctx context.Context, js jetstream.JetStream) ([]string, error) {
	u := upgrader{js: js}
	if err := u.regions(ctx); err != nil {
		return nil, err
	}
	for _, kc := range bucketConfigs(DefaultEventRetention) {
		if !IsOwnedBucket(kc.Bucket) {
			continue
		}
		if err := u.again(ctx, func() error { return u.bucket(ctx, kc) }); err != nil {
			return u.done, err
		}
	}
	if err := u.again(ctx, func() error { return u.mark(ctx) }); err != nil {
		return u.done, err
	}
	return u.done, nil
}

// upgradeBudget bounds how long one step of Upgrade is tried again while
// JetStream answers that it is not ready (a stream whose sources just
// changed elects its leader again).
const upgradeBudget = time.Minute

// again runs step, which does only what is left to do, until it succeeds,
// fails for good, or upgradeBudget passed.
func (u *upgrader) again(ctx context.Context, step func() error) error {
	deadline := time.Now().Add(upgradeBudget)
	b := atLeast(250*time.Millisecond, 2*time.Second)
	for {
		err := step()
		if err == nil || !notReady(err) || time.Now().After(deadline) {
			return err
		}
		if b.Sleep(ctx) != nil {
			return err
		}
	}
}

// upgrader carries what Upgrade found and did.
type upgrader struct {
	js      jetstream.JetStream
	origin  string
	all     []string // every region, the origin first
	homes   map[string]string
	done    []string
	streams map[string]bool
}

func (u *upgrader) did(format string, args ...any) {
	u.done = append(u.done, fmt.Sprintf(format, args...))
}

// regions finds the origin (where the agents bucket is kept) and every
// other region: those keeping an event stream of their own or a copy of
// the agents bucket.
func (u *upgrader) regions(ctx context.Context) error {
	s, err := u.js.Stream(ctx, "KV_"+BucketAgents)
	if err != nil {
		return fmt.Errorf("the agents bucket: %w", err)
	}
	c := s.CachedInfo().Cluster
	if c == nil || c.Name == "" {
		return errors.New("the agents bucket is kept on a server in no cluster: a deployment of one server keeps its records as they are, nothing to upgrade")
	}
	u.origin = c.Name
	u.all = []string{u.origin}
	u.streams = map[string]bool{}
	names := u.js.StreamNames(ctx)
	for name := range names.Name() {
		u.streams[name] = true
		region, ok := strings.CutPrefix(name, EventStream+"_")
		if !ok {
			region, ok = strings.CutPrefix(name, "KV_"+BucketAgents+"_")
		}
		if ok && ValidRegion(region) == nil && !strings.HasPrefix(region, "of_") && !slices.Contains(u.all, region) {
			u.all = append(u.all, region)
		}
	}
	if err := names.Err(); err != nil {
		return fmt.Errorf("list the streams: %w", err)
	}
	slices.Sort(u.all[1:])
	return nil
}

// bucket upgrades one owned bucket.
func (u *upgrader) bucket(ctx context.Context, kc jetstream.KeyValueConfig) error {
	legacy, err := u.js.Stream(ctx, "KV_"+kc.Bucket)
	if err != nil {
		return fmt.Errorf("stream KV_%s: %w", kc.Bucket, err)
	}
	p := provisioner{js: u.js}
	for _, region := range u.all {
		p.region = region
		// As many replicas as the region's copy of the bucket has.
		p.cfg.Replicas = legacy.CachedInfo().Config.Replicas
		if s, err := u.js.Stream(ctx, "KV_"+RegionBucket(kc.Bucket, region)); err == nil && region != u.origin {
			p.cfg.Replicas = s.CachedInfo().Config.Replicas
		}
		own := kc
		own.Bucket = OwnerBucket(kc.Bucket, region)
		own.Description = kc.Description + " (owned by region " + region + ")"
		if u.streams["KV_"+own.Bucket] {
			continue
		}
		if err := p.ensure(ctx, p.bucketStream(own)); err != nil {
			return err
		}
		u.streams["KV_"+own.Bucket] = true
		u.did("region %s: made bucket %s of the records it owns", region, own.Bucket)
	}
	for _, region := range u.all {
		if err := u.aggregate(ctx, &p, kc, region); err != nil {
			return err
		}
	}
	return u.copyRecords(ctx, kc.Bucket)
}

// aggregate makes region's aggregate of an owned bucket: the origin's
// bucket itself, or a new bucket in place of region's mirror.
func (u *upgrader) aggregate(ctx context.Context, p *provisioner, kc jetstream.KeyValueConfig, region string) error {
	p.region = region
	name := aggregateIn(kc.Bucket, region, u.origin)
	s, err := u.js.Stream(ctx, "KV_"+name)
	switch {
	case err == nil && s.CachedInfo().Config.Mirror != nil:
		p.cfg.Replicas = s.CachedInfo().Config.Replicas
		if err := u.js.DeleteStream(ctx, "KV_"+name); err != nil {
			return fmt.Errorf("delete the mirror KV_%s: %w", name, err)
		}
		u.did("region %s: removed %s, the mirror of %s", region, name, kc.Bucket)
		err = jetstream.ErrStreamNotFound
	case err != nil && !errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("stream KV_%s: %w", name, err)
	}
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		agg := kc
		agg.Bucket = name
		agg.Description = kc.Description + " (every region's)"
		want := p.bucketStream(agg)
		want.Metadata = ownedMetadata()
		if err := p.ensure(ctx, want); err != nil {
			return err
		}
		u.did("region %s: made %s, every region's records of %s", region, name, kc.Bucket)
	}
	for _, from := range u.all {
		added, err := u.source(ctx, name, OwnerBucket(kc.Bucket, from))
		if err != nil {
			return err
		}
		if added {
			u.did("region %s: %s now copies region %s's records", region, name, from)
		}
	}
	return nil
}

// source makes agg source owned unless it does, and says whether it did.
func (u *upgrader) source(ctx context.Context, agg, owned string) (bool, error) {
	s, err := u.js.Stream(ctx, "KV_"+agg)
	if err != nil {
		return false, fmt.Errorf("stream KV_%s: %w", agg, err)
	}
	cfg := s.CachedInfo().Config
	if slices.ContainsFunc(cfg.Sources, func(src *jetstream.StreamSource) bool { return src.Name == "KV_"+owned }) {
		return false, nil
	}
	cfg.Sources = append(cfg.Sources, ownedSource(owned, agg))
	if _, err := u.js.UpdateStream(ctx, cfg); err != nil {
		return false, fmt.Errorf("stream KV_%s: source KV_%s: %w", agg, owned, err)
	}
	return true, nil
}

// copyRecords copies each record the origin's bucket holds as the earlier
// version stored it (not copied from an owned bucket) to its owner's
// bucket.
func (u *upgrader) copyRecords(ctx context.Context, bucket string) error {
	cons, err := u.js.OrderedConsumer(ctx, "KV_"+bucket, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy})
	if err != nil {
		return fmt.Errorf("read %s: %w", bucket, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("read %s: %w", bucket, err)
	}
	prefix := "$KV." + bucket + "."
	copied := map[string]int{}
	for left := info.NumPending; left > 0; left-- {
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			return fmt.Errorf("read %s: %w", bucket, err)
		}
		h := msg.Headers()
		if src, _ := sourceOf(h); src != "" {
			continue
		}
		if op := h.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			continue
		}
		key := strings.TrimPrefix(msg.Subject(), prefix)
		owner := u.ownerOf(bucket, msg.Data())
		kv, err := u.js.KeyValue(ctx, OwnerBucket(bucket, owner))
		if err != nil {
			return fmt.Errorf("bucket %s: %w", OwnerBucket(bucket, owner), err)
		}
		_, err = kv.Create(ctx, key, msg.Data())
		switch {
		case errors.Is(err, jetstream.ErrKeyExists):
			// Copied by an earlier run; its copy is on its way.
		case err != nil:
			return fmt.Errorf("copy %s/%s to region %s: %w", bucket, key, owner, err)
		default:
			copied[owner]++
		}
	}
	for _, region := range u.all {
		if n := copied[region]; n > 0 {
			u.did("%s: copied %d records to region %s, which owns them now", bucket, n, region)
		}
	}
	return nil
}

// ownerOf is the region that owns a record of the earlier layout: an
// agent's home region when it is one of the deployment's, the origin
// otherwise.
func (u *upgrader) ownerOf(bucket string, data []byte) string {
	if bucket != BucketAgents {
		return u.origin
	}
	var a struct {
		HomeRegion string `json:"home_region"`
	}
	if json.Unmarshal(data, &a) == nil && slices.Contains(u.all, a.HomeRegion) {
		return a.HomeRegion
	}
	return u.origin
}

// mark marks the agents bucket as kept per owner, last, so Provision lets
// the services start only on a finished upgrade.
func (u *upgrader) mark(ctx context.Context) error {
	s, err := u.js.Stream(ctx, "KV_"+BucketAgents)
	if err != nil {
		return fmt.Errorf("stream KV_%s: %w", BucketAgents, err)
	}
	cfg := s.CachedInfo().Config
	if cfg.Metadata[metaLayout] == layoutOwned {
		return nil
	}
	if cfg.Metadata == nil {
		cfg.Metadata = map[string]string{}
	}
	cfg.Metadata[metaLayout] = layoutOwned
	if _, err := u.js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("stream KV_%s: %w", BucketAgents, err)
	}
	u.did("marked the global records as owned per region")
	return nil
}
