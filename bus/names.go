package bus

import (
	"strings"
)

// Streams, key-value buckets and object stores. Every name the services use is
// defined here, once.
const (
	// EventStream keeps every CloudEvent for the retention window.
	EventStream = "MESH_EVENTS"

	BucketAgents        = "mesh_agents"
	BucketConversations = "mesh_conversations"
	BucketRuns          = "mesh_runs"
	BucketIdempotency   = "mesh_idempotency"
	BucketPairing       = "mesh_pairing"
	BucketRuntimes      = "mesh_runtimes"
	BucketCredentials   = "mesh_credentials"
	BucketPresence      = "mesh_presence"
	// BucketHeartbeats holds the time of each runtime's last heartbeat,
	// owned by the registry and read by it alone: presence (online or
	// offline) is written to BucketPresence only when it changes, so the
	// services that watch presence are not woken by every heartbeat.
	BucketHeartbeats   = "mesh_heartbeats"
	BucketArtifactMeta = "mesh_artifact_meta"
	BucketConfig       = "mesh_config"
	// BucketConsumers holds event consumer credentials (by id, and their
	// hashes), owned by the credential service.
	BucketConsumers = "mesh_consumers"
	// BucketWebhooks holds webhook subscriptions, owned by the webhooks service.
	BucketWebhooks = "mesh_webhooks"
	// BucketDeliveries holds the webhook deliveries that failed at least once:
	// their attempts, and the dead letters.
	BucketDeliveries = "mesh_webhook_deliveries"
	// BucketA2ATasks holds what the A2A standard knows of a task and a task
	// run does not (message history with ids and roles, the caller, push
	// configurations), written only by the gateway's A2A endpoint.
	BucketA2ATasks = "mesh_a2a_tasks"
	// BucketA2AKeys holds per-agent A2A API keys (by id, and their hashes),
	// owned by the credential service.
	BucketA2AKeys = "mesh_a2a_keys"
	// BucketWebSessions holds the web page's sign-in codes and sessions, by
	// hash, owned by the gateway.
	BucketWebSessions = "mesh_web_sessions"
	// BucketDelegation holds the delegation service's state: routing rules,
	// the delegations it is following, and partner platforms (with their
	// shared secrets).
	BucketDelegation = "mesh_delegation"
	// BucketA2AEndpoints holds what the partner and envelope endpoints keep
	// beyond a task run: the partner method of a task, and which
	// conversation a caller's session id stands for. Written only by those
	// endpoints. The bucket keeps its first name, under which deployments
	// already hold these records.
	BucketA2AEndpoints = "mesh_a2a_doors"

	// BucketRegions holds, per region, the NATS URLs its runtimes are told
	// to connect to, each written by that region's credentials service and
	// read by every region's.
	BucketRegions = "mesh_regions"

	ObjectArtifacts = "mesh_artifacts"
)

// SourcedHeader is the header JetStream puts on a message a stream copied
// from another (its sources): in the origin's EventStream, the events of
// the other regions' streams.
const SourcedHeader = "Nats-Stream-Source"

// ObjectStream is the stream that holds an object store's content.
func ObjectStream(bucket string) string { return "OBJ_" + bucket }

// ObjectChunkSubject is the subject on which an object's content is stored
// in its store's stream, a chunk a message, in order (the object store's
// format, which the artifacts service reads a part at a time).
func ObjectChunkSubject(bucket, nuid string) string { return "$O." + bucket + ".C." + nuid }

// Keys of BucketConfig.
const (
	// ConfigOwnerTokenHash holds the hash of the owner credential.
	ConfigOwnerTokenHash = "owner_token_hash"
	// ConfigA2AJWTSecret holds the key that signs the platform's A2A bearer
	// JWTs (agent-to-agent calls made on an agent's behalf). Generated once.
	ConfigA2AJWTSecret = "a2a_jwt_secret"
)

// Subject roots.
const (
	subjEvents  = "mesh.evt"
	subjRuntime = "mesh.rt"
	subjService = "mesh.svc"
)

// EventSubject is the subject of an event about entity id of the given kind,
// owned by agentID: mesh.evt.<agent>.<kind>.<id>.
func EventSubject(agentID, kind, id string) string {
	return subjEvents + "." + agentID + "." + kind + "." + id
}

// EventFilter builds an event subject filter; empty arguments match anything.
func EventFilter(agentID, kind, id string) string {
	return subjEvents + "." + orStar(agentID) + "." + orStar(kind) + "." + orStar(id)
}

// EventStreamSubjects are the subjects events are stored under in
// EventStream (and in each region's event stream): every event.
func EventStreamSubjects() []string { return []string{subjEvents + ".>"} }

// subjRegionEvents roots the subjects services publish events to, with
// their region: mesh.revt.<region>.<agent>.<kind>.<id>. Each region's event
// stream captures its own region's and stores them as EventSubject.
const subjRegionEvents = "mesh.revt"

// RegionEventSubject is where a service of region publishes an event to be
// stored (see subjRegionEvents).
func RegionEventSubject(region, agentID, kind, id string) string {
	return subjRegionEvents + "." + region + "." + agentID + "." + kind + "." + id
}

// RegionEventStream is the event stream of region outside the origin
// region: it captures the events the region's services publish and is
// sourced by EventStream, the origin's, which captures the origin's own.
func RegionEventStream(region string) string { return EventStream + "_" + region }

// ParseEventSubject splits an event subject into agent, kind and id.
func ParseEventSubject(subject string) (agentID, kind, id string, ok bool) {
	parts := strings.Split(subject, ".")
	if len(parts) != 5 || parts[0]+"."+parts[1] != subjEvents {
		return "", "", "", false
	}
	return parts[2], parts[3], parts[4], true
}

// Runtime operations: what a runtime (over NATS directly, or through the HTTP
// gateway on its behalf) asks of the platform.
const (
	RuntimeOpHello     = "hello"
	RuntimeOpHeartbeat = "heartbeat"
	RuntimeOpPull      = "pull"
	RuntimeOpOffer     = "offer"
	RuntimeOpClaim     = "claim"
	RuntimeOpClaimMany = "claim_many"
	RuntimeOpRenew     = "renew"
	RuntimeOpProgress  = "progress"
	RuntimeOpComplete  = "complete"
	RuntimeOpFail      = "fail"
	RuntimeOpRelease   = "release"
	// RuntimeOpGoodbye says a runtime is stopping on purpose: the registry
	// shows it offline at once instead of after its heartbeat timeout.
	RuntimeOpGoodbye = "goodbye"
	// RuntimeOpCanceled waits for runs the runtime holds to be canceled,
	// and names them: how a runtime hears of a cancel at once. It is a
	// request of the runtime's own, answered on its own reply inbox, so no
	// other connection can send a runtime a cancel.
	RuntimeOpCanceled = "canceled"
	// RuntimeOpApproval asks whether the host of a run the runtime holds
	// may take a step (a tool call), waiting for a person's decision when
	// the agent's approval policy says "ask" (meshapi.ApprovalRequest).
	RuntimeOpApproval = "approval"
	// RuntimeOpConnection asks where the runtime should connect now: its
	// agent's home region's NATS URLs, then the other regions' (the
	// credentials service answers, as at pairing).
	RuntimeOpConnection = "connection"
	// Delegation from inside a run the runtime holds (the delegation
	// service answers them): the agents it may delegate to, a task for one
	// of them, a delegated task's state, its artifacts' content, its cancel.
	RuntimeOpDelegateAgents   = "delegate_agents"
	RuntimeOpDelegateSend     = "delegate_send"
	RuntimeOpDelegateGet      = "delegate_get"
	RuntimeOpDelegateArtifact = "delegate_artifact"
	RuntimeOpDelegateCancel   = "delegate_cancel"
	// RuntimeOpArtifactOpen starts writing an artifact of a run the runtime
	// holds (the artifacts service answers it); the content follows on
	// ArtifactUploadSubject.
	RuntimeOpArtifactOpen = "artifact_open"
)

// runtimeOpArtifactUpload is the token of an artifact's upload subject.
const runtimeOpArtifactUpload = "artifact_upload"

// ArtifactUploadSubject is where a runtime sends the content of an artifact
// it opened, in order, and then ends it: the artifacts service instance that
// answered the open listens there alone. It is under the runtime's own
// subjects, so no other runtime can write to it.
func ArtifactUploadSubject(agentID, runtimeID, artifactID string) string {
	return RuntimeSubject(agentID, runtimeID, runtimeOpArtifactUpload) + "." + artifactID
}

// serviceOpArtifactInput is the token of an input file's upload subject.
const serviceOpArtifactInput = "input_upload"

// ArtifactInputSubject is where a platform service (the A2A endpoint) sends
// the content of an input file it opened, in order, and then ends it: the
// artifacts service instance that answered the open listens there alone. It
// is a service subject, which only platform connections reach.
func ArtifactInputSubject(artifactID string) string {
	return ServiceSubject(ServiceArtifacts, serviceOpArtifactInput) + "." + artifactID
}

// RuntimeSubject is the subject of a runtime operation. The NATS server only
// lets a runtime publish under its own agent and runtime id, so a service may
// trust the ids it parses from this subject.
func RuntimeSubject(agentID, runtimeID, op string) string {
	return subjRuntime + "." + agentID + "." + runtimeID + "." + op
}

// RuntimeSubjectPattern matches op for every runtime.
func RuntimeSubjectPattern(op string) string { return subjRuntime + ".*.*." + op }

// RuntimeSubjectPrefix is everything one runtime may publish to.
func RuntimeSubjectPrefix(agentID, runtimeID string) string {
	return subjRuntime + "." + agentID + "." + runtimeID + ".>"
}

// ParseRuntimeSubject returns the agent and runtime ids of a runtime subject.
func ParseRuntimeSubject(subject string) (agentID, runtimeID, op string, ok bool) {
	parts := strings.Split(subject, ".")
	if len(parts) != 5 || parts[0]+"."+parts[1] != subjRuntime {
		return "", "", "", false
	}
	return parts[2], parts[3], parts[4], true
}

// RuntimeInboxPrefix is the private reply-inbox prefix of a runtime connection.
func RuntimeInboxPrefix(runtimeID string) string {
	return "_INBOX_" + strings.ReplaceAll(runtimeID, "-", "")
}

// ServiceSubject is the subject of a platform-internal service operation.
func ServiceSubject(service, op string) string { return subjService + "." + service + "." + op }

// Service names.
const (
	ServiceAgents      = "agents"
	ServiceCredentials = "credentials"
	ServiceRegistry    = "registry"
	ServiceTaskQueue   = "taskqueue"
	ServiceArtifacts   = "artifacts"
	ServiceGateway     = "gateway"
	ServiceWebhooks    = "webhooks"
	// ServiceDelegation owns routing rules and delegated runs.
	ServiceDelegation = "delegation"
)

// AuthCalloutSubject is where the NATS server asks who a connecting client is.
const AuthCalloutSubject = "$SYS.REQ.USER.AUTH"

func orStar(s string) string {
	if s == "" {
		return "*"
	}
	return s
}

// Keys of BucketRuntimes: a runtime record is stored under its id, and each
// agent's active runtime id under ActiveRuntimeKey.
const activeRuntimePrefix = "active."

// ActiveRuntimeKey is the key holding the id of an agent's active runtime.
func ActiveRuntimeKey(agentID string) string { return activeRuntimePrefix + agentID }

// IsActiveRuntimeKey reports whether key is an ActiveRuntimeKey.
func IsActiveRuntimeKey(key string) bool { return strings.HasPrefix(key, activeRuntimePrefix) }

// Keys of BucketA2AKeys: an A2A API key's record under A2AKeyKey, so an
// agent's keys are listed by prefix, and under A2AKeyHashKey a record naming
// the key's agent and id, found from the key a caller presents.
const a2aKeyPrefix = "key."

// A2AKeyKey is the key of an A2A API key's record.
func A2AKeyKey(agentID, keyID string) string { return a2aKeyPrefix + agentID + "." + keyID }

// IsA2AKeyKey reports whether key is an A2AKeyKey.
func IsA2AKeyKey(key string) bool { return strings.HasPrefix(key, a2aKeyPrefix) }

// A2AKeyHashKey is the key naming the A2A API key whose hash is hash.
func A2AKeyHashKey(hash string) string { return "hash." + hash }

// AgentEventsFilter matches every event of one agent.
func AgentEventsFilter(agentID string) string { return subjEvents + "." + agentID + ".>" }

// RuntimeUserName is the name the auth callout gives a runtime's NATS user
// (the connection's authorised user in the server's monitoring); the platform
// finds a revoked runtime's connections by it.
func RuntimeUserName(runtimeID string) string { return "runtime " + runtimeID }

// ConsumerNameBase is the JetStream consumer name of a consumer credential's
// durable consumer on EventStream, which the platform creates with the
// credential.
func ConsumerNameBase(consumerID string) string {
	return "con_" + strings.ReplaceAll(consumerID, "-", "")
}

// ConsumerInboxPrefix is the private reply-inbox prefix of a consumer
// credential's connections.
func ConsumerInboxPrefix(consumerID string) string {
	return "_INBOX_con" + strings.ReplaceAll(consumerID, "-", "")
}

// ConsumerUserName is the name the auth callout gives a consumer credential's
// NATS user; the platform finds a revoked consumer's connections by it.
func ConsumerUserName(consumerID string) string { return "consumer " + consumerID }

// WebhookConsumer is the durable consumer of EventStream that feeds one
// webhook subscription.
func WebhookConsumer(webhookID string) string { return "webhook_" + webhookID }
