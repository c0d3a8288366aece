package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"
)

// Global records owned by a region. In a deployment whose servers are in a
// cluster (a region), each global bucket but the settings (ownedBuckets) is
// kept as:
//
//   - one bucket per region of the records that region owns
//     (OwnerBucket: mesh_agents_of_west), placed there and written there
//     alone: a record is owned by the region where it was created;
//   - one aggregate per region (AggregateBucket: the bucket's own name in
//     the origin, RegionBucket elsewhere), placed there, a key-value
//     bucket whose stream sources every region's owned bucket (the
//     subject transform $KV.<owned>.> -> $KV.<aggregate>.>, as nats.go
//     makes a bucket's sources), which the region's services read.
//
// Two regions never write the same key (a key is created where it is not
// yet in the aggregate, and changed in the bucket of the region that owns
// it), so the aggregates never disagree on a record for longer than a
// source takes to carry it. Each aggregate entry names the owned bucket it
// was copied from and the record's revision there (the Nats-Stream-Source
// header): that is the owner, and the revision a compare-and-set uses.
// On a server in no cluster a global bucket is one plain bucket, as it
// always was.

// ownedBuckets are the global buckets kept as owned buckets and aggregates.
// The settings (BucketConfig: the owner credential's hash, the A2A signing
// key) are one record each, for the whole deployment: they stay in the
// origin, mirrored to every region.
var ownedBuckets = map[string]bool{
	BucketAgents: true, BucketRuntimes: true, BucketCredentials: true, BucketPairing: true,
	BucketConsumers: true, BucketWebhooks: true, BucketA2AKeys: true,
	BucketWebSessions: true, BucketDelegation: true, BucketRegions: true,
}

// IsOwnedBucket reports whether bucket is a global bucket whose records are
// owned by the region that creates them (see ownedBuckets).
func IsOwnedBucket(bucket string) bool { return ownedBuckets[bucket] }

// OwnerBucket names region's bucket of the records of bucket it owns.
func OwnerBucket(bucket, region string) string { return bucket + "_of_" + region }

// aggregateIn names region's aggregate of an owned bucket: the bucket's
// own name in the origin, RegionBucket elsewhere.
func aggregateIn(bucket, region, origin string) string {
	if region == origin {
		return bucket
	}
	return RegionBucket(bucket, region)
}

// metaLayout, in an aggregate stream's metadata, says its records are
// owned per region (the layout Provision makes and Upgrade moves to).
const (
	metaLayout      = "a2amesh.layout"
	layoutOwned     = "owned"
	headerSourceKey = "Nats-Stream-Source"
)

// ownedLayouts remembers, per connection, that the global records are kept
// owned per region (once so, always so).
var ownedLayouts sync.Map // *nats.Conn -> bool

// ownedLayout reports whether the connection's region keeps the global
// records owned per region: on a server in a cluster, once provisioned by
// this version (its owned agents bucket exists).
func ownedLayout(ctx context.Context, js jetstream.JetStream) bool {
	region := connRegion(js)
	if region == "" {
		return false
	}
	if _, ok := ownedLayouts.Load(js.Conn()); ok {
		return true
	}
	if _, err := js.Stream(ctx, "KV_"+OwnerBucket(BucketAgents, region)); err != nil {
		return false
	}
	ownedLayouts.Store(js.Conn(), true)
	return true
}

// ownedStore reads and writes the records of one owned bucket for one
// region: its own owned bucket, its aggregate, and the owned buckets of the
// other regions, opened when a record they own is changed.
type ownedStore struct {
	js     jetstream.JetStream
	nc     *nats.Conn
	bucket string
	region string
	// own is this region's owned bucket; agg its aggregate.
	own       jetstream.KeyValue
	ownName   string
	ownStream jetstream.Stream
	aggKV     jetstream.KeyValue
	agg       string
	aggStream jetstream.Stream
	mu        sync.Mutex
	others    map[string]jetstream.KeyValue
}

func openOwned(ctx context.Context, js jetstream.JetStream, bucket string) (*ownedStore, error) {
	region := connRegion(js)
	origin, err := originRegion(ctx, js)
	if err != nil {
		return nil, err
	}
	o := &ownedStore{js: js, nc: js.Conn(), bucket: bucket, region: region,
		ownName: OwnerBucket(bucket, region), agg: aggregateIn(bucket, region, origin), others: map[string]jetstream.KeyValue{}}
	if o.own, err = js.KeyValue(ctx, o.ownName); err != nil {
		return nil, err
	}
	if o.aggKV, err = js.KeyValue(ctx, o.agg); err != nil {
		return nil, err
	}
	if o.ownStream, err = js.Stream(ctx, "KV_"+o.ownName); err != nil {
		return nil, err
	}
	if o.aggStream, err = js.Stream(ctx, "KV_"+o.agg); err != nil {
		return nil, err
	}
	return o, nil
}

// local reads the last message of key in one of this region's buckets:
// with a direct get, which a server of this region answers (a leader's
// message get is heard by every region's servers), but, for a decision
// (latest), from the stream's leader when it has replicas, one of which
// may lag.
func (o *ownedStore) local(ctx context.Context, s jetstream.Stream, bucket, key string, latest bool) (*storedEntry, error) {
	if latest && s.CachedInfo().Config.Replicas > 1 {
		return lastOf(ctx, o.js, bucket, key)
	}
	if !validKey(key) {
		return nil, mesh.ErrNotFound
	}
	m, err := s.GetLastMsgForSubject(ctx, "$KV."+bucket+"."+key)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, mesh.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	e := &storedEntry{data: m.Data, seq: m.Sequence, header: m.Header}
	op := m.Header.Get("KV-Operation")
	e.deleted = op == "DEL" || op == "PURGE"
	return e, nil
}

// storedEntry is the last message of a key in a bucket's stream.
type storedEntry struct {
	data    []byte
	seq     uint64
	deleted bool
	header  nats.Header
}

// lastOf reads the last message of key in bucket's stream from the
// stream's leader, deletions included.
func lastOf(ctx context.Context, js jetstream.JetStream, bucket, key string) (*storedEntry, error) {
	if !validKey(key) {
		return nil, mesh.ErrNotFound
	}
	req, _ := json.Marshal(map[string]string{"last_by_subj": "$KV." + bucket + "." + key})
	msg, err := js.Conn().RequestWithContext(ctx, APIPrefix(js)+"STREAM.MSG.GET.KV_"+bucket, req)
	if err != nil {
		return nil, err
	}
	var resp msgGetResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, fmt.Errorf("message get answer: %w", err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil, mesh.ErrNotFound
		}
		return nil, resp.Error
	}
	if resp.Message == nil {
		return nil, jetstream.ErrInvalidJetStreamResponse
	}
	e := &storedEntry{data: resp.Message.Data, seq: resp.Message.Sequence}
	if len(resp.Message.Header) > 0 {
		if e.header, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, fmt.Errorf("message get headers: %w", err)
		}
		op := e.header.Get("KV-Operation")
		e.deleted = op == "DEL" || op == "PURGE"
	}
	return e, nil
}

// sourceOf reads the Nats-Stream-Source header of an aggregate entry: the
// stream it was copied from and its sequence there ("", 0 for a record
// stored in the stream itself, before the records were owned).
func sourceOf(h nats.Header) (string, uint64) {
	fields := strings.Fields(h.Get(headerSourceKey))
	if len(fields) < 2 {
		return "", 0
	}
	name, _, _ := strings.Cut(fields[0], ":")
	seq, _ := strconv.ParseUint(fields[1], 10, 64)
	return name, seq
}

// ownerRegion is the region that owns an aggregate entry copied from
// stream ("" when it is no region's owned bucket).
func ownerRegion(bucket, stream string) string {
	region, _ := strings.CutPrefix(stream, "KV_"+bucket+"_of_")
	if region == stream {
		return ""
	}
	return region
}

// owner is where a key lives: the region that owns it and whether a live
// record is there.
type owner struct {
	region string
	entry  *storedEntry
}

// find locates key: this region's owned bucket first (its latest revision,
// this region's own writes included), then the aggregate.
func (o *ownedStore) find(ctx context.Context, key string) (owner, error) {
	e, err := o.local(ctx, o.ownStream, o.ownName, key, true)
	if err == nil {
		return owner{region: o.region, entry: e}, nil
	}
	if !errors.Is(err, mesh.ErrNotFound) {
		return owner{}, err
	}
	// The aggregate may be a moment behind the owners, wherever it is read.
	e, err = o.local(ctx, o.aggStream, o.agg, key, false)
	if errors.Is(err, mesh.ErrNotFound) {
		return owner{region: o.region}, nil
	}
	if err != nil {
		return owner{}, err
	}
	stream, seq := sourceOf(e.header)
	region := ownerRegion(o.bucket, stream)
	if region == "" || region == o.region {
		// Not copied from an owned bucket (a record of the layout before
		// owners: Upgrade gives it one), or this region's own, which its
		// owned bucket no longer holds.
		return owner{region: o.region}, nil
	}
	e.seq = seq
	return owner{region: region, entry: e}, nil
}

// read returns the record of key and its revision in its owner's bucket.
// fresh reads it there (another region's, for a compare-and-set, which
// remote then names); else a record of another region is read from this
// region's aggregate.
func (o *ownedStore) read(ctx context.Context, key string, fresh bool, remote *string) ([]byte, uint64, error) {
	w, err := o.find(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	if w.entry == nil && searchAllowed(o.nc) {
		// Created a moment ago in another region, maybe, and not copied
		// here yet.
		w = o.elsewhere(ctx, key)
	}
	if w.entry == nil || w.entry.deleted {
		return nil, 0, mesh.ErrNotFound
	}
	if !fresh || w.region == o.region {
		return w.entry.data, w.entry.seq, nil
	}
	*remote = w.region
	if err := refusal(o.nc, w.region); err != nil {
		return nil, 0, err
	}
	e, err := lastOf(ctx, o.js, OwnerBucket(o.bucket, w.region), key)
	if err != nil {
		return nil, 0, err
	}
	if e.deleted {
		return nil, 0, mesh.ErrNotFound
	}
	return e.data, e.seq, nil
}

// elsewhereWait bounds the search of the other regions' owned buckets for
// a key this region has not heard of: a round trip to the farthest region,
// and inside one try of a store call (attemptTimeout), so what follows it
// in the try has time left.
const elsewhereWait = 1500 * time.Millisecond

// elsewhere asks every other region's owned bucket (those this region's
// aggregate sources, but those remembered unreachable) for key at once,
// for at most elsewhereWait: a region that does not answer is taken not
// to hold it, and is remembered unreachable (see reach.go), so the next
// searches skip it at once until a probe finds it again.
func (o *ownedStore) elsewhere(ctx context.Context, key string) owner {
	outer := ctx
	ctx, cancel := context.WithTimeout(ctx, elsewhereWait)
	defer cancel()
	info, err := o.js.Stream(ctx, "KV_"+o.agg)
	if err != nil {
		return owner{region: o.region}
	}
	found := make(chan owner, len(info.CachedInfo().Config.Sources))
	asked := 0
	for _, src := range info.CachedInfo().Config.Sources {
		region := ownerRegion(o.bucket, src.Name)
		if region == "" || region == o.region || refusal(o.nc, region) != nil {
			continue
		}
		asked++
		go func() {
			e, err := lastOf(ctx, o.js, OwnerBucket(o.bucket, region), key)
			if err != nil {
				if Transient(err) && outer.Err() == nil {
					markDown(o.nc, region, "its records do not answer")
				}
				e = nil
			}
			found <- owner{region: region, entry: e}
		}()
	}
	for range asked {
		if w := <-found; w.entry != nil {
			return w
		}
	}
	return owner{region: o.region}
}

// Searches of the other regions for a key a read does not find here are
// bounded per connection: a read of a missing key is what a caller with
// a wrong credential causes (a credential is found by its hash), and each
// search asks every other region, so without a bound one caller's bad
// requests would become many times as many requests across the gateways.
// Beyond the bound, a read of a key this region has not heard of is not
// found, as it would be once the search ended (a pairing or sign-in code
// redeemed, a credential checked); a change of a record without a read
// before it always searches.
const (
	// SearchesPerSecond is how many searches a connection starts a second.
	SearchesPerSecond = 20
	// SearchBurst is how many it may start at once after a quiet while.
	SearchBurst = 40
)

// searchLimits holds each connection's bound of searches.
var searchLimits sync.Map // *nats.Conn -> *rate.Limiter

// searchAllowed takes one of nc's searches, if one is left.
func searchAllowed(nc *nats.Conn) bool {
	l, ok := searchLimits.Load(nc)
	if !ok {
		l, _ = searchLimits.LoadOrStore(nc, rate.NewLimiter(SearchesPerSecond, SearchBurst))
	}
	return l.(*rate.Limiter).Allow()
}

// writeKind is what a write does to a record.
type writeKind int

const (
	// createRecord makes a record that must not exist.
	createRecord writeKind = iota
	// putRecord stores a record whatever it held: a key of this region's,
	// or a new one (which this region then owns).
	putRecord
	// changeRecord changes or deletes an existing record at a revision.
	changeRecord
)

// writer is the bucket a change of key is written to: its owner's, or
// this region's for a key no region holds. create refuses a key another
// region holds (mesh CONFLICT), and creates it in region in when given.
func (o *ownedStore) writer(ctx context.Context, key string, kind writeKind, in string) (jetstream.KeyValue, string, error) {
	w, err := o.find(ctx, key)
	if err != nil {
		return nil, "", err
	}
	if w.entry == nil && kind == changeRecord {
		// Created a moment ago in another region, maybe.
		w = o.elsewhere(ctx, key)
	}
	create := kind == createRecord
	switch {
	case create && w.entry != nil && !w.entry.deleted:
		if w.region == o.region {
			// Its own bucket refuses it.
			return o.own, "", nil
		}
		return nil, "", mesh.ErrConflict
	case create && in != "" && in != o.region:
		return o.creator(ctx, in)
	case create || w.region == o.region:
		return o.own, "", nil
	}
	kv, err := o.ownedBy(ctx, w.region)
	return kv, w.region, err
}

// creator is the bucket a record owned by region is created in: region's
// owned bucket, or this region's when region keeps none.
func (o *ownedStore) creator(ctx context.Context, region string) (jetstream.KeyValue, string, error) {
	kv, err := o.ownedBy(ctx, region)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return o.own, "", nil
	}
	return kv, region, err
}

// ownedBy opens region's owned bucket, refusing at once a region this
// connection remembers as unreachable.
func (o *ownedStore) ownedBy(ctx context.Context, region string) (jetstream.KeyValue, error) {
	if err := refusal(o.nc, region); err != nil {
		return nil, err
	}
	o.mu.Lock()
	kv, ok := o.others[region]
	o.mu.Unlock()
	if ok {
		return kv, nil
	}
	kv, err := o.js.KeyValue(ctx, OwnerBucket(o.bucket, region))
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	o.others[region] = kv
	o.mu.Unlock()
	return kv, nil
}

// ownerDown turns the failure of a read or write of region's owned bucket (its
// store did not answer within the retry budget) into a refusal naming it,
// and remembers the region, so the next writes of its records are refused
// at once while a probe waits for it.
func ownerDown(nc *nats.Conn, region string, err error) error {
	if region == "" || !errors.Is(err, mesh.ErrUnavailable) {
		return err
	}
	markDown(nc, region, "the region that owns the record does not answer")
	return unreachableError(region, "it owns the record; its store does not answer")
}

// ErrEarlierLayout says the deployment keeps its global records as an
// earlier version did (once, in the origin, mirrored to the other regions):
// `a2a-platform upgrade` moves them to records owned per region.
var ErrEarlierLayout = errors.New("the global records are kept as an earlier version kept them (in the origin region, mirrored to the others); run `a2a-platform upgrade` once to give them owners (docs/operations.md, Upgrading)")

// ownedMetadata marks an aggregate stream (see metaLayout).
func ownedMetadata() map[string]string { return map[string]string{metaLayout: layoutOwned} }

// checkLayout refuses, on a server in a cluster, an agents bucket made by
// an earlier version (ErrEarlierLayout).
func (p *provisioner) checkLayout(ctx context.Context) error {
	if p.region == "" {
		return nil
	}
	tctx, cancel := p.try(ctx)
	defer cancel()
	s, err := p.js.Stream(tctx, "KV_"+BucketAgents)
	if err != nil {
		return fmt.Errorf("provision stream KV_%s: %w", BucketAgents, err)
	}
	info := s.CachedInfo()
	switch {
	case info.Config.Metadata[metaLayout] == layoutOwned:
		return nil
	case info.State.Msgs > 0:
		return ErrEarlierLayout
	case info.Cluster != nil && info.Cluster.Name != "" && info.Cluster.Name != p.region:
		return fmt.Errorf("%w: stream KV_%s, waiting for region %s", errOriginNotYet, BucketAgents, info.Cluster.Name)
	}
	// Made empty, by hand or by an earlier version: nothing to move.
	cfg := info.Config
	if cfg.Metadata == nil {
		cfg.Metadata = map[string]string{}
	}
	cfg.Metadata[metaLayout] = layoutOwned
	if _, err := p.js.UpdateStream(tctx, cfg); err != nil {
		return fmt.Errorf("provision stream KV_%s: %w", BucketAgents, err)
	}
	return nil
}

// ensureOwned keeps this region's owned bucket of an owned bucket and its
// aggregate, which sources every region's owned bucket, and makes every
// other region's aggregate source this region's owned bucket. The regions
// are those whose owned buckets the origin's aggregate sources: a region
// registers there once it made its aggregate, then reads the list, so of
// two regions joining at once the later one to register sees the other
// and joins the two.
func (p *provisioner) ensureOwned(ctx context.Context, kc jetstream.KeyValueConfig, origin string) error {
	bucket := kc.Bucket
	own := kc
	own.Bucket = OwnerBucket(bucket, p.region)
	own.Description = kc.Description + " (owned by region " + p.region + ")"
	if err := p.ensure(ctx, p.bucketStream(own)); err != nil {
		return err
	}
	if origin != p.region {
		if err := p.madeByOrigin(ctx, "KV_"+bucket, origin); err != nil {
			return err
		}
	}
	agg := kc
	agg.Bucket = aggregateIn(bucket, p.region, origin)
	agg.Description = kc.Description + " (every region's)"
	want := p.bucketStream(agg)
	want.Metadata = ownedMetadata()
	if err := p.ensure(ctx, want); err != nil {
		return err
	}
	if err := addStreamSource(ctx, p.js, "KV_"+agg.Bucket, ownedSource(own.Bucket, agg.Bucket)); err != nil {
		return err
	}
	if origin != p.region {
		if err := addStreamSource(ctx, p.js, "KV_"+bucket, ownedSource(own.Bucket, bucket)); err != nil {
			return err
		}
	}
	regions, err := p.ownerRegions(ctx, bucket)
	if err != nil {
		return err
	}
	for _, other := range regions {
		if other == p.region {
			continue
		}
		if err := addStreamSource(ctx, p.js, "KV_"+agg.Bucket, ownedSource(OwnerBucket(bucket, other), agg.Bucket)); err != nil {
			return err
		}
		// The other region's provisioning does it too, when it starts:
		// while it is down, this region is not held up by it.
		if err := addStreamSource(ctx, p.js, "KV_"+aggregateIn(bucket, other, origin), ownedSource(own.Bucket, aggregateIn(bucket, other, origin))); err != nil {
			p.cfg.Logger.Warn().Err(err).Str("region", other).Msg("region's aggregate does not source this region's records yet")
		}
	}
	return nil
}

// ownerRegions lists the regions whose owned buckets of bucket the
// origin's aggregate sources.
func (p *provisioner) ownerRegions(ctx context.Context, bucket string) ([]string, error) {
	tctx, cancel := p.try(ctx)
	defer cancel()
	s, err := p.js.Stream(tctx, "KV_"+bucket)
	if err != nil {
		return nil, fmt.Errorf("provision stream KV_%s: %w", bucket, err)
	}
	var regions []string
	for _, src := range s.CachedInfo().Config.Sources {
		if r := ownerRegion(bucket, src.Name); r != "" {
			regions = append(regions, r)
		}
	}
	return regions, nil
}

// ownedSource is the source of an aggregate that copies an owned bucket.
func ownedSource(owned, agg string) *jetstream.StreamSource {
	return &jetstream.StreamSource{Name: "KV_" + owned, SubjectTransforms: []jetstream.SubjectTransformConfig{
		{Source: "$KV." + owned + ".>", Destination: "$KV." + agg + ".>"}}}
}
