package bus

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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

// Provision creates or updates every stream, bucket and object store the
// services use. It is idempotent: running it on an existing data dir changes
// nothing but configuration drift.
func Provision(ctx context.Context, js jetstream.JetStream, cfg ProvisionConfig) error {
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
		},
	}
	for _, sc := range streams {
		if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("provision stream %s: %w", sc.Name, err)
		}
	}
	buckets := []jetstream.KeyValueConfig{
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
		{Bucket: BucketDeliveries, Description: "webhook deliveries that failed at least once, and dead letters", TTL: cfg.EventRetention},
		{Bucket: BucketA2ATasks, Description: "A2A task data a task run does not hold: history, caller, push configurations"},
		{Bucket: BucketA2AKeys, Description: "per-agent A2A API keys, by id and by hash"},
		// No sign-in session outlives a week; expired ones are dropped unread.
		{Bucket: BucketWebSessions, Description: "web sign-in codes and sessions, by hash", TTL: 7 * 24 * time.Hour},
		{Bucket: BucketDelegation, Description: "routing rules, delegations being followed, partner platforms"},
		{Bucket: BucketA2ADoors, Description: "partner-route and envelope-protocol data a task run does not hold"},
	}
	for _, kc := range buckets {
		kc.Storage = jetstream.FileStorage
		kc.Replicas = cfg.Replicas
		kc.History = 1
		kc.MaxValueSize = maxRecordBytes
		if _, err := js.CreateOrUpdateKeyValue(ctx, kc); err != nil {
			return fmt.Errorf("provision bucket %s: %w", kc.Bucket, err)
		}
	}
	_, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
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

// Provisioned reports whether every stream exists, for readiness checks.
func Provisioned(ctx context.Context, js jetstream.JetStream) error {
	for _, name := range []string{QueueStream, EventStream, "KV_" + BucketRuns, "KV_" + BucketAgents, "KV_" + BucketWebhooks, "OBJ_" + ObjectArtifacts} {
		if _, err := js.Stream(ctx, name); err != nil {
			return fmt.Errorf("stream %s: %w", name, err)
		}
	}
	return nil
}
