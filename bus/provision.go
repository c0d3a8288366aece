package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// ProvisionConfig sizes what Provision creates.
type ProvisionConfig struct {
	// Replicas is the replication factor of every stream, bucket and store:
	// 1 on one server, 3 on a cluster. Default 1.
	Replicas int
	// EventRetention is how long events are kept. Default 7 days.
	EventRetention time.Duration
	// MaxArtifactBytes bounds one artifact object. Default 25 MiB.
	MaxArtifactBytes int64
	// Logger hears, once, that Provision is waiting for JetStream.
	Logger zerolog.Logger
	// Origin, when set, is the region that holds the records every region
	// reads (the global buckets): a process of another region never makes
	// them, but waits until that region's have (and refuses a deployment
	// whose global records are kept elsewhere). Unset: the first region to
	// provision holds them. Ignored on a server in no cluster.
	Origin string
}

// Defaults for ProvisionConfig.
const (
	DefaultEventRetention   = 7 * 24 * time.Hour
	DefaultMaxArtifactBytes = 25 << 20
	// DuplicateWindow is how long JetStream remembers message ids for dedupe.
	DuplicateWindow = 2 * time.Minute
	// maxRecordBytes bounds one key-value record (a task run with its input and output).
	maxRecordBytes = 4 << 20
)

// provisionRetryMax caps the wait between two tries of Provision.
const provisionRetryMax = 2 * time.Second

// Provision creates or updates every stream, bucket and object store the
// services use. It is idempotent: running it on an existing data dir changes
// nothing but configuration drift, and any number of processes may run it at
// once. While JetStream is not ready (a cluster still forming, a meta leader
// being elected, too few nodes up for the replicas asked for), it logs
// "waiting for JetStream" once and tries again with backoff until it
// succeeds or ctx ends: services may start before their NATS cluster.
func Provision(ctx context.Context, js jetstream.JetStream, cfg ProvisionConfig) error {
	b := atLeast(100*time.Millisecond, provisionRetryMax)
	waiting := false
	for {
		err := provisionOnce(ctx, js, cfg)
		if err == nil {
			if waiting {
				cfg.Logger.Info().Msg("JetStream ready; streams and buckets provisioned")
			}
			return nil
		}
		if !notReady(err) || ctx.Err() != nil {
			return err
		}
		if !waiting {
			cfg.Logger.Warn().Err(err).Msg("waiting for JetStream")
			waiting = true
		}
		if b.Sleep(ctx) != nil {
			return fmt.Errorf("JetStream not ready: %w", err)
		}
	}
}

// notReady reports whether a provisioning error means JetStream is not
// ready yet, rather than refusing what was asked.
func notReady(err error) bool {
	if Transient(err) || errors.Is(err, errOriginNotYet) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
		return true
	}
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// A stream this pass made, or another process makes at the same
		// time, not known yet to the server that answered (its cluster
		// has not applied the assignment, or elects the stream's
		// leader): the next pass finds it, or makes what is missing.
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jsErrCodeClusterNoPeers, jsErrCodeInsufficientResources, jsErrCodeClusterNotAvail:
			return true
		}
	}
	return false
}

// JetStream API error codes of a cluster that is not ready.
const (
	jsErrCodeClusterNotAvail       = 10008 // no meta leader
	jsErrCodeClusterNoPeers        = 10005 // fewer nodes up than replicas asked for
	jsErrCodeInsufficientResources = 10023
)

// provisionTry bounds one JetStream call of Provision.
const provisionTry = 5 * time.Second

func provisionOnce(ctx context.Context, js jetstream.JetStream, cfg ProvisionConfig) error {
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.EventRetention == 0 {
		cfg.EventRetention = DefaultEventRetention
	}
	if cfg.MaxArtifactBytes == 0 {
		cfg.MaxArtifactBytes = DefaultMaxArtifactBytes
	}
	p := provisioner{js: js, cfg: cfg, region: connRegion(js)}
	// The agents bucket first: the region it lives in is the origin, and
	// of regions provisioning at once, the one whose create wins is it
	// unless the origin is configured. Every region must agree on the
	// origin before it makes buckets of its own, or a region would keep
	// its runs where its services do not look.
	buckets := bucketConfigs(cfg.EventRetention)
	if origin, ok := p.provisionedBefore(ctx); ok && !p.originAnswers(ctx) {
		return p.startOnOwn(ctx, origin)
	}
	if err := p.awaitOrigin(ctx); err != nil {
		return err
	}
	agents := p.bucketStream(buckets[0])
	if p.region != "" {
		agents.Metadata = ownedMetadata()
	}
	if err := p.ensure(ctx, agents); err != nil {
		return err
	}
	origin, err := p.origin(ctx)
	if err != nil {
		return err
	}
	if err := p.checkLayout(ctx); err != nil {
		return err
	}
	events := eventStreamConfig(cfg, eventRegion(js))
	if origin != p.region {
		events.Name = RegionEventStream(p.region)
		events.Metadata = map[string]string{metaOrigin: origin}
	}
	if err := p.ensure(ctx, events); err != nil {
		return err
	}
	if origin != p.region {
		if err := p.madeByOrigin(ctx, EventStream, origin); err != nil {
			return err
		}
		if err := p.ensureSourced(ctx, events.Name); err != nil {
			return err
		}
	}
	for _, kc := range buckets {
		if p.region != "" && IsOwnedBucket(kc.Bucket) {
			if err := p.ensureOwned(ctx, kc, origin); err != nil {
				return err
			}
			continue
		}
		if origin != p.region && IsGlobalBucket(kc.Bucket) {
			if err := p.madeByOrigin(ctx, "KV_"+kc.Bucket, origin); err != nil {
				return err
			}
			if err := p.ensureMirror(ctx, kc); err != nil {
				return err
			}
			continue
		}
		if origin != p.region && IsRegionalBucket(kc.Bucket) {
			// This region's own part of the bucket; the origin's keeps
			// the bucket's name.
			kc.Bucket = RegionBucket(kc.Bucket, p.region)
		}
		if err := p.ensure(ctx, p.bucketStream(kc)); err != nil {
			return err
		}
	}
	objects := ObjectArtifacts
	if origin != p.region {
		objects = RegionBucket(objects, p.region)
	}
	return p.ensureObjects(ctx, objects)
}

// metaOrigin, in the metadata of a region's event stream outside the
// origin, names the origin: a process of the region started while the
// origin does not answer learns it there.
const metaOrigin = "a2amesh.origin"

// originAnswerWait bounds the question whether the origin answers, when
// this region was provisioned before.
const originAnswerWait = 2 * time.Second

// provisionedBefore reports whether this region, outside the origin, was
// provisioned before (its event stream names the origin), and the origin.
func (p *provisioner) provisionedBefore(ctx context.Context) (string, bool) {
	if p.region == "" {
		return "", false
	}
	tctx, cancel := p.try(ctx)
	defer cancel()
	s, err := p.js.Stream(tctx, RegionEventStream(p.region))
	if err != nil {
		return "", false
	}
	origin := s.CachedInfo().Config.Metadata[metaOrigin]
	return origin, origin != "" && origin != p.region
}

// originAnswers reports whether the origin's agents bucket answers.
func (p *provisioner) originAnswers(ctx context.Context) bool {
	tctx, cancel := context.WithTimeout(ctx, originAnswerWait)
	defer cancel()
	_, err := p.js.Stream(tctx, "KV_"+BucketAgents)
	return err == nil
}

// startOnOwn lets a process of a region provisioned before start while the
// origin does not answer: nothing of what provisioning would check there
// can be, and nothing the region's own work needs is there. It starts on
// what its region holds, once every stream of its region answers (as
// readiness asks them); what the origin's provisioning would add or
// correct waits for the next start, and the sources its region's copies
// lack are added by SourceTending once the origin answers.
func (p *provisioner) startOnOwn(ctx context.Context, origin string) error {
	origins.Store(p.js.Conn(), origin)
	if r := CheckReady(ctx, p.js); r.Err != nil {
		forgetOrigin(p.js.Conn())
		return fmt.Errorf("%w: region %s does not answer, and this region's streams are not all there: %v", errOriginNotYet, origin, r.Err)
	}
	p.cfg.Logger.Warn().Str("origin", origin).Msg("the origin region does not answer; starting on what this region was provisioned with")
	return nil
}

// provisioner creates what is missing and corrects what drifted, asking
// JetStream's meta leader only then: a stream's info is answered by the
// stream itself, so a start on a complete deployment needs no meta
// operation and works while the supercluster's meta group has no quorum.
type provisioner struct {
	js  jetstream.JetStream
	cfg ProvisionConfig
	// region is the cluster this process is connected to ("" on a server in
	// no cluster): what it creates is placed there.
	region string
}

func (p *provisioner) try(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, provisionTry)
}

// placement places what this process creates in its own region.
func (p *provisioner) placement() *jetstream.Placement {
	if p.region == "" {
		return nil
	}
	return &jetstream.Placement{Cluster: p.region}
}

// errOriginNotYet says the configured origin has not made the global
// records yet: Provision waits for it.
var errOriginNotYet = errors.New("the origin region has not provisioned the global records yet")

// awaitOrigin checks that the global records are kept in the configured
// origin: outside it, errOriginNotYet while they do not exist yet (in the
// origin, this process makes them); anywhere, an error when they are kept
// in another region.
func (p *provisioner) awaitOrigin(ctx context.Context) error {
	origin := p.cfg.Origin
	if origin == "" || p.region == "" {
		return nil
	}
	tctx, cancel := p.try(ctx)
	defer cancel()
	found, err := originRegion(tctx, p.js)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound) && origin == p.region:
		return nil
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("%w: waiting for region %s", errOriginNotYet, origin)
	case err != nil:
		return err
	case found != origin:
		return fmt.Errorf("the origin region is configured as %s, but the global records (stream KV_%s) are kept in region %s", origin, BucketAgents, found)
	}
	return nil
}

// origin is the region holding the records every region reads (the global
// buckets), or this region when there is none yet (this process creates
// them).
func (p *provisioner) origin(ctx context.Context) (string, error) {
	tctx, cancel := p.try(ctx)
	defer cancel()
	origin, err := originRegion(tctx, p.js)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return p.region, nil
	}
	return origin, err
}

// madeByOrigin checks, outside the origin, that a stream the origin's
// provisioning makes (the gathered event log, a global bucket) exists. It
// is never made here: when every region starts at once, the origin's
// provisioning may have made the agents bucket, which names the origin,
// and not yet the rest, and a global record made here would be kept in
// this region, out of reach whenever this region is down. errOriginNotYet
// until the origin made it.
func (p *provisioner) madeByOrigin(ctx context.Context, name, origin string) error {
	tctx, cancel := p.try(ctx)
	defer cancel()
	_, err := p.js.Stream(tctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w: stream %s, waiting for region %s", errOriginNotYet, name, origin)
	}
	if err != nil {
		return fmt.Errorf("provision stream %s: %w", name, err)
	}
	return nil
}

// ensure creates a stream that is missing, placed in this region, and
// updates one that drifted from cfg if it lives in this region (a stream
// of another region is that region's to size: its replicas follow its own
// number of nodes).
func (p *provisioner) ensure(ctx context.Context, want jetstream.StreamConfig) error {
	tctx, cancel := p.try(ctx)
	defer cancel()
	s, err := p.js.Stream(tctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		want.Placement = p.placement()
		_, err = p.js.CreateStream(tctx, want)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			// Another process created it a moment ago, maybe elsewhere.
			return p.ensure(ctx, want)
		}
		if err != nil {
			return fmt.Errorf("provision stream %s: %w", want.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("provision stream %s: %w", want.Name, err)
	}
	info := s.CachedInfo()
	if !p.ours(info) || !drifted(info.Config, want) {
		return nil
	}
	want.Placement = info.Config.Placement
	if want.Sources == nil {
		// Other regions' provisioning adds the sources of the event log.
		want.Sources = info.Config.Sources
	}
	if _, err := p.js.UpdateStream(tctx, want); err != nil {
		return fmt.Errorf("provision stream %s: %w", want.Name, err)
	}
	return nil
}

// ours reports whether a stream lives in this process's region.
func (p *provisioner) ours(info *jetstream.StreamInfo) bool {
	return p.region == "" || info.Cluster == nil || info.Cluster.Name == "" || info.Cluster.Name == p.region
}

// drifted reports whether have differs from want in what Provision sets
// (fields want leaves zero compare as the server's defaults).
func drifted(have, want jetstream.StreamConfig) bool {
	if want.MaxMsgSize == 0 {
		want.MaxMsgSize = -1
	}
	if want.MaxMsgsPerSubject == 0 {
		want.MaxMsgsPerSubject = -1
	}
	if want.MaxConsumers == 0 {
		want.MaxConsumers = -1
	}
	switch {
	case want.Mirror != nil:
		// A mirror keeps its origin's message ids: the server gives it no
		// duplicate window of its own.
		want.Duplicates = 0
	case want.Duplicates == 0:
		want.Duplicates = DuplicateWindow
	}
	return have.Description != want.Description || !slices.Equal(have.Subjects, want.Subjects) ||
		have.Retention != want.Retention || have.MaxAge != want.MaxAge || have.Replicas != want.Replicas ||
		have.Duplicates != want.Duplicates || have.MaxConsumers != want.MaxConsumers ||
		have.MaxMsgSize != want.MaxMsgSize || have.MaxMsgsPerSubject != want.MaxMsgsPerSubject ||
		have.AllowDirect != want.AllowDirect || transformOf(have) != transformOf(want) ||
		want.Metadata[metaOrigin] != "" && have.Metadata[metaOrigin] != want.Metadata[metaOrigin]
}

// transformOf is a stream's subject transform, comparable.
func transformOf(c jetstream.StreamConfig) jetstream.SubjectTransformConfig {
	if c.SubjectTransform == nil {
		return jetstream.SubjectTransformConfig{}
	}
	return *c.SubjectTransform
}

// bucketStream is the stream configuration of a key-value bucket, as the
// client would make it: Provision compares and creates buckets as streams,
// so it can tell a bucket that needs nothing from one that drifted.
func (p *provisioner) bucketStream(kc jetstream.KeyValueConfig) jetstream.StreamConfig {
	maxAge := kc.TTL
	dup := 2 * time.Minute
	if maxAge > 0 && maxAge < dup {
		dup = maxAge
	}
	return jetstream.StreamConfig{
		Name:              "KV_" + kc.Bucket,
		Description:       kc.Description,
		Subjects:          []string{"$KV." + kc.Bucket + ".>"},
		MaxMsgsPerSubject: 1,
		MaxBytes:          -1,
		MaxAge:            maxAge,
		MaxMsgSize:        maxRecordBytes,
		Storage:           jetstream.FileStorage,
		Replicas:          p.cfg.Replicas,
		AllowRollup:       true,
		DenyDelete:        true,
		Duplicates:        dup,
		MaxMsgs:           -1,
		MaxConsumers:      -1,
		AllowDirect:       true,
		Discard:           jetstream.DiscardNew,
	}
}

// RegionBucket is the name of region's own bucket of bucket outside the
// origin region: its mirror of a global bucket, its part of a regional one.
// In the origin region, a bucket keeps its name.
func RegionBucket(bucket, region string) string { return bucket + "_" + region }

// ensureMirror keeps a mirror of a global bucket in this region, which
// answers this region's direct gets of the bucket (MirrorDirect) and feeds
// its services' watches (StartMirror), so reads of records every region
// needs stay in the region, and go on while the origin is unreachable.
// Writes still go to the origin.
func (p *provisioner) ensureMirror(ctx context.Context, kc jetstream.KeyValueConfig) error {
	want := p.bucketStream(kc)
	want.Name = "KV_" + RegionBucket(kc.Bucket, p.region)
	want.Description = kc.Description + " (mirror of " + kc.Bucket + ")"
	want.Subjects = nil
	want.Mirror = &jetstream.StreamSource{Name: "KV_" + kc.Bucket}
	want.MirrorDirect = true
	want.Duplicates = 0
	return p.ensure(ctx, want)
}

func (p *provisioner) ensureObjects(ctx context.Context, name string) error {
	tctx, cancel := p.try(ctx)
	defer cancel()
	_, err := p.js.ObjectStore(tctx, name)
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return fmt.Errorf("provision object store %s: %w", name, err)
	}
	_, err = p.js.CreateObjectStore(tctx, jetstream.ObjectStoreConfig{
		Bucket:      name,
		Description: "artifact content",
		Storage:     jetstream.FileStorage,
		Replicas:    p.cfg.Replicas,
		Placement:   p.placement(),
	})
	if err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
		return fmt.Errorf("provision object store %s: %w", name, err)
	}
	return nil
}

// eventStreamConfig is the configuration of the event stream of region:
// it captures what the region's services publish (RegionEventSubject) and
// stores each event under EventSubject, so that every region's stream, and
// EventStream which sources them, hold the same subjects.
func eventStreamConfig(cfg ProvisionConfig, region string) jetstream.StreamConfig {
	published := subjRegionEvents + "." + region + ".>"
	return jetstream.StreamConfig{
		Name:             EventStream,
		Description:      "every CloudEvent A2A Mesh emits",
		Subjects:         []string{published},
		SubjectTransform: &jetstream.SubjectTransformConfig{Source: published, Destination: subjEvents + ".>"},
		Retention:        jetstream.LimitsPolicy,
		Storage:          jetstream.FileStorage,
		Replicas:         cfg.Replicas,
		MaxAge:           cfg.EventRetention,
		Duplicates:       DuplicateWindow,
		MaxConsumers:     -1,
		// Followers of runs read it with direct gets (see
		// internal/runfollow): any replica answers them, and they need
		// neither a consumer nor the JetStream meta group.
		AllowDirect: true,
	}
}

// ensureSourced makes the origin's EventStream source this region's event
// stream, so the one event log every reader follows holds this region's
// events too, in order per run, and catches up on them after an outage of
// either region. Done once, when the region joins: it updates a stream of
// another region, which needs JetStream's meta leader.
func (p *provisioner) ensureSourced(ctx context.Context, name string) error {
	return addStreamSource(ctx, p.js, EventStream, &jetstream.StreamSource{Name: name})
}

// ProvisionedStreams names every stream Provision makes: the event stream,
// one per key-value bucket and the object store's.
func ProvisionedStreams() []string {
	names := []string{EventStream}
	for _, kc := range bucketConfigs(DefaultEventRetention) {
		names = append(names, "KV_"+kc.Bucket)
	}
	return append(names, ObjectStream(ObjectArtifacts))
}

// Provisioned reports whether every stream, bucket and object store this
// region's services use is there and answers, naming each that is missing
// (CheckReady's Err).
func Provisioned(ctx context.Context, js jetstream.JetStream) error {
	return CheckReady(ctx, js).Err
}

// globalBuckets hold the records every region reads: who the agents,
// runtimes and credentials are, the platform's settings, the owner's
// subscriptions and rules, where each region's NATS servers are. They are
// kept once, in the origin region, and mirrored to every other region.
var globalBuckets = map[string]bool{
	BucketAgents: true, BucketRuntimes: true, BucketCredentials: true, BucketPairing: true,
	BucketConfig: true, BucketConsumers: true, BucketWebhooks: true, BucketA2AKeys: true,
	BucketWebSessions: true, BucketDelegation: true, BucketRegions: true,
}

// IsGlobalBucket reports whether bucket holds records every region reads
// (kept once, mirrored to every region).
func IsGlobalBucket(bucket string) bool { return globalBuckets[bucket] }

// regionalBuckets hold what a region keeps of its own agents: their task
// runs (which are also the queue), the idempotency keys and conversations
// of the runs created there, their runtimes' presence and heartbeats, their
// artifacts (metadata, and content in the object store of that name) and
// what the A2A, partner and envelope endpoints keep of their tasks and
// callers' sessions; and the webhook deliveries that failed at least once,
// kept in the region whose event stream the webhook reads.
// Each region has its own bucket of each, placed there (the origin's keeps
// the bucket's name, the others' are RegionBucket), written and read by
// that region's services alone, so a region's work goes on while another
// region is down.
var regionalBuckets = map[string]bool{
	BucketRuns: true, BucketIdempotency: true, BucketConversations: true,
	BucketPresence: true, BucketHeartbeats: true,
	BucketArtifactMeta: true, ObjectArtifacts: true, BucketA2ATasks: true, BucketA2AEndpoints: true,
	BucketDeliveries: true,
}

// IsRegionalBucket reports whether each region keeps its own bucket of
// bucket (see regionalBuckets).
func IsRegionalBucket(bucket string) bool { return regionalBuckets[bucket] }

// bucketConfigs lists every key-value bucket the platform keeps.
func bucketConfigs(eventRetention time.Duration) []jetstream.KeyValueConfig {
	return []jetstream.KeyValueConfig{
		// First: where it lives is the origin (see provisionOnce).
		{Bucket: BucketAgents, Description: "agent accounts"},
		{Bucket: BucketConversations, Description: "conversations and their workspaces"},
		{Bucket: BucketRuns, Description: "task runs, the system of record for execution"},
		{Bucket: BucketIdempotency, Description: "idempotency keys of task-run creation"},
		{Bucket: BucketPairing, Description: "one-time pairing codes, by hash", TTL: 24 * time.Hour},
		{Bucket: BucketRuntimes, Description: "attached runtimes and each agent's active runtime"},
		{Bucket: BucketCredentials, Description: "runtime credentials, by hash"},
		{Bucket: BucketPresence, Description: "runtime presence: online or offline"},
		{Bucket: BucketHeartbeats, Description: "the time of each runtime's last heartbeat"},
		{Bucket: BucketArtifactMeta, Description: "artifact metadata"},
		{Bucket: BucketConfig, Description: "platform settings (credential hashes)"},
		{Bucket: BucketConsumers, Description: "event consumer credentials, by id and by hash"},
		{Bucket: BucketWebhooks, Description: "webhook subscriptions"},
		// Dead letters are kept for the event retention window, like the
		// events they carry.
		{Bucket: BucketDeliveries, Description: "webhook deliveries that failed at least once, and dead letters", TTL: eventRetention},
		{Bucket: BucketA2ATasks, Description: "A2A task data a task run does not hold: history, caller, push configurations"},
		{Bucket: BucketA2AKeys, Description: "per-agent A2A API keys, by id and by hash"},
		// No sign-in session outlives a week; expired ones are dropped unread.
		{Bucket: BucketWebSessions, Description: "web sign-in codes and sessions, by hash", TTL: 7 * 24 * time.Hour},
		{Bucket: BucketDelegation, Description: "routing rules, delegations being followed, partner platforms"},
		{Bucket: BucketA2AEndpoints, Description: "partner-route and envelope-protocol data a task run does not hold"},
		{Bucket: BucketRegions, Description: "each region's NATS URLs for runtimes"},
	}
}
