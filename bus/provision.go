package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	wait := 100 * time.Millisecond
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
		select {
		case <-time.After(wait + jitter(wait)):
		case <-ctx.Done():
			return fmt.Errorf("JetStream not ready: %w", err)
		}
		wait = min(2*wait, provisionRetryMax)
	}
}

// notReady reports whether a provisioning error means JetStream is not
// ready yet, rather than refusing what was asked.
func notReady(err error) bool {
	if Transient(err) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
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
	try := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, provisionTry) }
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.EventRetention == 0 {
		cfg.EventRetention = DefaultEventRetention
	}
	if cfg.MaxArtifactBytes == 0 {
		cfg.MaxArtifactBytes = DefaultMaxArtifactBytes
	}
	streams := []jetstream.StreamConfig{
		{
			Name:        QueueStream,
			Description: "pending task-run attempts, one durable consumer per agent",
			Subjects:    QueueStreamSubjects(),
			Retention:   jetstream.WorkQueuePolicy,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
			Duplicates:  DuplicateWindow,
			// Unlimited: one consumer per agent.
			MaxConsumers: -1,
		},
		{
			Name:         EventStream,
			Description:  "every CloudEvent A2A Mesh emits",
			Subjects:     EventStreamSubjects(),
			Retention:    jetstream.LimitsPolicy,
			Storage:      jetstream.FileStorage,
			Replicas:     cfg.Replicas,
			MaxAge:       cfg.EventRetention,
			Duplicates:   DuplicateWindow,
			MaxConsumers: -1,
			// Followers of runs read it with direct gets (see
			// internal/runfollow): any replica answers them, and they need
			// neither a consumer nor the JetStream meta group.
			AllowDirect: true,
		},
	}
	for _, sc := range streams {
		tctx, cancel := try()
		_, err := js.CreateOrUpdateStream(tctx, sc)
		cancel()
		if err != nil {
			return fmt.Errorf("provision stream %s: %w", sc.Name, err)
		}
	}
	buckets := bucketConfigs(cfg.EventRetention)
	for _, kc := range buckets {
		kc.Storage = jetstream.FileStorage
		kc.Replicas = cfg.Replicas
		kc.History = 1
		kc.MaxValueSize = maxRecordBytes
		tctx, cancel := try()
		_, err := js.CreateOrUpdateKeyValue(tctx, kc)
		cancel()
		if err != nil {
			return fmt.Errorf("provision bucket %s: %w", kc.Bucket, err)
		}
	}
	tctx, cancel := try()
	defer cancel()
	_, err := js.CreateOrUpdateObjectStore(tctx, jetstream.ObjectStoreConfig{
		Bucket:      ObjectArtifacts,
		Description: "artifact content",
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
	})
	if err != nil {
		return fmt.Errorf("provision object store %s: %w", ObjectArtifacts, err)
	}
	return nil
}

// ProvisionedStreams names every stream Provision makes: the queue and event
// streams, one per key-value bucket and the object store's.
func ProvisionedStreams() []string {
	names := []string{QueueStream, EventStream}
	for _, kc := range bucketConfigs(DefaultEventRetention) {
		names = append(names, "KV_"+kc.Bucket)
	}
	return append(names, "OBJ_"+ObjectArtifacts)
}

// Provisioned reports whether every stream, bucket and object store exists,
// for readiness checks, naming each that is missing. It asks JetStream once.
func Provisioned(ctx context.Context, js jetstream.JetStream) error {
	have := map[string]bool{}
	lister := js.StreamNames(ctx)
	for name := range lister.Name() {
		have[name] = true
	}
	if err := lister.Err(); err != nil {
		return fmt.Errorf("stream names: %w", err)
	}
	var missing []string
	for _, name := range ProvisionedStreams() {
		if !have[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing streams: %s", strings.Join(missing, ", "))
	}
	return nil
}

// bucketConfigs lists every key-value bucket the platform keeps.
func bucketConfigs(eventRetention time.Duration) []jetstream.KeyValueConfig {
	return []jetstream.KeyValueConfig{
		{Bucket: BucketAgents, Description: "agent accounts"},
		{Bucket: BucketConversations, Description: "conversations and their workspaces"},
		{Bucket: BucketRuns, Description: "task runs, the system of record for execution"},
		{Bucket: BucketIdempotency, Description: "idempotency keys of task-run creation"},
		{Bucket: BucketPairing, Description: "one-time pairing codes, by hash", TTL: 24 * time.Hour},
		{Bucket: BucketRuntimes, Description: "attached runtimes and each agent's active runtime"},
		{Bucket: BucketCredentials, Description: "runtime credentials, by hash"},
		{Bucket: BucketPresence, Description: "runtime heartbeats and presence"},
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
