package meshapi

import (
	"context"
	"fmt"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go"
)

// Client calls the platform's services over the bus.
type Client struct {
	nc *nats.Conn
}

// NewClient returns a client on nc.
func NewClient(nc *nats.Conn) *Client { return &Client{nc: nc} }

func (c *Client) call(ctx context.Context, service, op string, req, resp any) error {
	return bus.Call(ctx, c.nc, bus.ServiceSubject(service, op), req, resp)
}

// runCall calls a task-queue operation that answers with the run.
func (c *Client) runCall(ctx context.Context, op string, req any) (*mesh.TaskRun, error) {
	var r TaskRunReply
	if err := c.call(ctx, bus.ServiceTaskQueue, op, req, &r); err != nil {
		return nil, err
	}
	return &r.TaskRun, nil
}

// CreateAgent creates an agent account.
func (c *Client) CreateAgent(ctx context.Context, req CreateAgentRequest) (*mesh.Agent, error) {
	var a mesh.Agent
	return &a, c.call(ctx, bus.ServiceAgents, OpAgentCreate, req, &a)
}

// GetAgent returns an agent account.
func (c *Client) GetAgent(ctx context.Context, agentID string) (*mesh.Agent, error) {
	var a mesh.Agent
	return &a, c.call(ctx, bus.ServiceAgents, OpAgentGet, GetAgentRequest{AgentID: agentID}, &a)
}

// ListAgents lists agent accounts.
func (c *Client) ListAgents(ctx context.Context) (*AgentList, error) {
	var l AgentList
	return &l, c.call(ctx, bus.ServiceAgents, OpAgentList, ListAgentsRequest{}, &l)
}

// UpdateAgent edits an agent account.
func (c *Client) UpdateAgent(ctx context.Context, req UpdateAgentRequest) (*mesh.Agent, error) {
	var a mesh.Agent
	return &a, c.call(ctx, bus.ServiceAgents, OpAgentUpdate, req, &a)
}

// DeleteAgent deletes an agent account (see DeleteAgentRequest).
func (c *Client) DeleteAgent(ctx context.Context, agentID string) (*DeleteAgentResponse, error) {
	var out DeleteAgentResponse
	return &out, c.call(ctx, bus.ServiceAgents, OpAgentDelete, DeleteAgentRequest{AgentID: agentID}, &out)
}

// IssuePairingCode issues a one-time pairing code.
func (c *Client) IssuePairingCode(ctx context.Context, req IssuePairingCodeRequest) (*PairingCode, error) {
	var p PairingCode
	return &p, c.call(ctx, bus.ServiceCredentials, OpPairingIssue, req, &p)
}

// Attach redeems a pairing code for a runtime credential.
func (c *Client) Attach(ctx context.Context, req AttachRequest) (*AttachResponse, error) {
	var r AttachResponse
	return &r, c.call(ctx, bus.ServiceCredentials, OpPairingAttach, req, &r)
}

// RevokeRuntime revokes a runtime's credential.
func (c *Client) RevokeRuntime(ctx context.Context, req RevokeRuntimeRequest) (*mesh.Runtime, error) {
	var r mesh.Runtime
	return &r, c.call(ctx, bus.ServiceCredentials, OpPairingRevoke, req, &r)
}

// Authenticate resolves a runtime credential hash to its runtime.
func (c *Client) Authenticate(ctx context.Context, tokenHash string) (*Identity, error) {
	var id Identity
	return &id, c.call(ctx, bus.ServiceCredentials, OpPairingAuthenticate, AuthenticateRequest{TokenHash: tokenHash}, &id)
}

// ListRuntimes lists an agent's runtimes with their presence.
func (c *Client) ListRuntimes(ctx context.Context, agentID string) (*RuntimeList, error) {
	var l RuntimeList
	return &l, c.call(ctx, bus.ServiceRegistry, OpRegistryList, ListRuntimesRequest{AgentID: agentID}, &l)
}

// CreateTaskRun creates a task run. A create with an idempotency key is
// sent again (every TryTimeout) while no copy of the task queue answers in
// time, or none is reachable: the copy that took it may have been lost with
// its node, and another answers the next send with the run the first
// stored, if it did, or creates it; the key never makes two. If the
// caller's time runs out that way, the answer is UNAVAILABLE (the endpoints'
// 503 with Retry-After): sending the create again with the same key is
// safe. A create without a key is sent once.
func (c *Client) CreateTaskRun(ctx context.Context, req CreateTaskRunRequest) (*CreateTaskRunResponse, error) {
	var r CreateTaskRunResponse
	if req.IdempotencyKey == "" {
		return &r, c.call(ctx, bus.ServiceTaskQueue, OpTaskCreate, req, &r)
	}
	err := bus.CallIdempotent(ctx, c.nc, bus.ServiceSubject(bus.ServiceTaskQueue, OpTaskCreate), req, &r, TryTimeout)
	if err != nil && mesh.AsError(err).Code == mesh.CodeTimeout {
		return nil, fmt.Errorf("%w: %w", mesh.Errorf(mesh.CodeUnavailable, "the task queue did not answer in time (a node may have been lost); send the create again with the same idempotency_key"), err)
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// GetTaskRun returns a task run.
func (c *Client) GetTaskRun(ctx context.Context, taskRunID string) (*mesh.TaskRun, error) {
	return c.runCall(ctx, OpTaskGet, GetTaskRunRequest{TaskRunID: taskRunID})
}

// ListTaskRuns pages task runs, newest first.
func (c *Client) ListTaskRuns(ctx context.Context, req ListTaskRunsRequest) (*TaskRunList, error) {
	var l TaskRunList
	return &l, c.call(ctx, bus.ServiceTaskQueue, OpTaskList, req, &l)
}

// CancelTaskRun cancels a task run.
func (c *Client) CancelTaskRun(ctx context.Context, req CancelTaskRunRequest) (*mesh.TaskRun, error) {
	return c.runCall(ctx, OpTaskCancel, req)
}

// AttachArtifact records an artifact on a running run.
func (c *Client) AttachArtifact(ctx context.Context, req AttachArtifactRequest) (*mesh.TaskRun, error) {
	return c.runCall(ctx, OpTaskAttachArtifact, req)
}

// CreateConversation starts a conversation and its workspace.
func (c *Client) CreateConversation(ctx context.Context, req CreateConversationRequest) (*mesh.Conversation, error) {
	var conv mesh.Conversation
	return &conv, c.call(ctx, bus.ServiceTaskQueue, OpConversationCreate, req, &conv)
}

// GetConversation returns a conversation.
func (c *Client) GetConversation(ctx context.Context, conversationID string) (*mesh.Conversation, error) {
	var conv mesh.Conversation
	return &conv, c.call(ctx, bus.ServiceTaskQueue, OpConversationGet, GetConversationRequest{ConversationID: conversationID}, &conv)
}

// CommitArtifact registers stored artifact content.
func (c *Client) CommitArtifact(ctx context.Context, req CommitArtifactRequest) (*mesh.Artifact, error) {
	var a mesh.Artifact
	return &a, c.call(ctx, bus.ServiceArtifacts, OpArtifactCommit, req, &a)
}

// GetArtifact returns artifact metadata.
func (c *Client) GetArtifact(ctx context.Context, artifactID string) (*mesh.Artifact, error) {
	var a mesh.Artifact
	return &a, c.call(ctx, bus.ServiceArtifacts, OpArtifactGet, GetArtifactRequest{ArtifactID: artifactID}, &a)
}

// ListArtifacts lists a run's artifacts.
func (c *Client) ListArtifacts(ctx context.Context, taskRunID string) (*ArtifactList, error) {
	var l ArtifactList
	return &l, c.call(ctx, bus.ServiceArtifacts, OpArtifactList, ListArtifactsRequest{TaskRunID: taskRunID}, &l)
}

// Runtime returns a client that speaks for one runtime. Over a runtime's own
// NATS connection the server only lets it use its own ids; the gateway uses it
// on behalf of runtimes it has authenticated.
func (c *Client) Runtime(agentID, runtimeID string) *RuntimeClient {
	return &RuntimeClient{nc: c.nc, agentID: agentID, runtimeID: runtimeID}
}

// RuntimeClient sends runtime operations for one runtime.
type RuntimeClient struct {
	nc        *nats.Conn
	agentID   string
	runtimeID string
}

func (c *RuntimeClient) call(ctx context.Context, op string, req, resp any) error {
	return bus.Call(ctx, c.nc, bus.RuntimeSubject(c.agentID, c.runtimeID, op), req, resp)
}

// report sends a progress, complete or fail report.
func (c *RuntimeClient) report(ctx context.Context, op string, req any) (*ReportAck, error) {
	var r ReportAck
	if err := c.call(ctx, op, req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Hello announces the runtime and returns its queue consumer and timings.
func (c *RuntimeClient) Hello(ctx context.Context) (*HelloResponse, error) {
	var r HelloResponse
	return &r, c.call(ctx, bus.RuntimeOpHello, struct{}{}, &r)
}

// Heartbeat marks the runtime online and renews the leases of its running
// runs. It is sent once: a failed heartbeat is how a runtime whose
// connection is refused finds out at once to check its credential (leases
// have their own renewals, which are sent again).
func (c *RuntimeClient) Heartbeat(ctx context.Context, req HeartbeatRequest) (*HeartbeatResponse, error) {
	var r HeartbeatResponse
	return &r, c.call(ctx, bus.RuntimeOpHeartbeat, req, &r)
}

// Pull claims the next pending run, waiting up to req.Wait.
func (c *RuntimeClient) Pull(ctx context.Context, req PullRequest) (*mesh.TaskRun, error) {
	var r PullResponse
	if err := c.call(ctx, bus.RuntimeOpPull, req, &r); err != nil {
		return nil, err
	}
	return r.TaskRun, nil
}

// TryTimeout bounds one try of a runtime operation that is sent again until
// the caller's context ends when its answer does not come (claim and renew:
// see bus.CallIdempotent).
const TryTimeout = 3 * time.Second

// callAgain sends an operation that has the same effect when repeated,
// again after a try whose answer was lost.
func (c *RuntimeClient) callAgain(ctx context.Context, op string, req, resp any) error {
	return bus.CallIdempotent(ctx, c.nc, bus.RuntimeSubject(c.agentID, c.runtimeID, op), req, resp, TryTimeout)
}

// Claim claims the run of a fetched queue message. Claiming the same
// attempt again is answered with the run the runtime already holds, so a
// try whose answer was lost is simply sent again.
func (c *RuntimeClient) Claim(ctx context.Context, req ClaimRequest) (*mesh.TaskRun, error) {
	var r TaskRunReply
	if err := c.callAgain(ctx, bus.RuntimeOpClaim, req, &r); err != nil {
		return nil, err
	}
	return &r.TaskRun, nil
}

// Release gives back a claimed run that never started.
func (c *RuntimeClient) Release(ctx context.Context, req ReleaseRequest) error {
	return c.call(ctx, bus.RuntimeOpRelease, req, nil)
}

// Renew extends the leases of running runs; a renewal whose answer was lost
// is sent again, well before the leases run out.
func (c *RuntimeClient) Renew(ctx context.Context, req RenewRequest) (*RenewResponse, error) {
	var r RenewResponse
	return &r, c.callAgain(ctx, bus.RuntimeOpRenew, req, &r)
}

// Progress reports progress on a run.
func (c *RuntimeClient) Progress(ctx context.Context, req ProgressRequest) (*ReportAck, error) {
	return c.report(ctx, bus.RuntimeOpProgress, req)
}

// Complete ends a run with its output.
func (c *RuntimeClient) Complete(ctx context.Context, req CompleteRequest) (*ReportAck, error) {
	return c.report(ctx, bus.RuntimeOpComplete, req)
}

// Fail ends a run as failed.
func (c *RuntimeClient) Fail(ctx context.Context, req FailRequest) (*ReportAck, error) {
	return c.report(ctx, bus.RuntimeOpFail, req)
}

// CreateConsumer creates an event consumer credential.
func (c *Client) CreateConsumer(ctx context.Context, req CreateConsumerRequest) (*CreateConsumerResponse, error) {
	var r CreateConsumerResponse
	return &r, c.call(ctx, bus.ServiceCredentials, OpConsumerCreate, req, &r)
}

// ListConsumers lists event consumer credentials.
func (c *Client) ListConsumers(ctx context.Context) (*ConsumerList, error) {
	var l ConsumerList
	return &l, c.call(ctx, bus.ServiceCredentials, OpConsumerList, ListConsumersRequest{}, &l)
}

// DeleteConsumer revokes an event consumer credential.
func (c *Client) DeleteConsumer(ctx context.Context, consumerID string) error {
	return c.call(ctx, bus.ServiceCredentials, OpConsumerDelete, DeleteConsumerRequest{ConsumerID: consumerID}, nil)
}

// CreateWebhook subscribes an endpoint to events.
func (c *Client) CreateWebhook(ctx context.Context, req CreateWebhookRequest) (*CreateWebhookResponse, error) {
	var r CreateWebhookResponse
	return &r, c.call(ctx, bus.ServiceWebhooks, OpWebhookCreate, req, &r)
}

// ListWebhooks lists webhook subscriptions.
func (c *Client) ListWebhooks(ctx context.Context) (*WebhookList, error) {
	var l WebhookList
	return &l, c.call(ctx, bus.ServiceWebhooks, OpWebhookList, ListWebhooksRequest{}, &l)
}

// GetWebhook returns one subscription.
func (c *Client) GetWebhook(ctx context.Context, webhookID string) (*Webhook, error) {
	var w Webhook
	return &w, c.call(ctx, bus.ServiceWebhooks, OpWebhookGet, WebhookRequest{WebhookID: webhookID}, &w)
}

// DeleteWebhook removes a subscription and its pending deliveries.
func (c *Client) DeleteWebhook(ctx context.Context, webhookID string) error {
	return c.call(ctx, bus.ServiceWebhooks, OpWebhookDelete, WebhookRequest{WebhookID: webhookID}, nil)
}

// ListDeliveries lists a subscription's recorded deliveries.
func (c *Client) ListDeliveries(ctx context.Context, req ListDeliveriesRequest) (*DeliveryList, error) {
	var l DeliveryList
	return &l, c.call(ctx, bus.ServiceWebhooks, OpWebhookDeliveries, req, &l)
}

// RedriveDelivery sends a recorded delivery again and returns it updated.
func (c *Client) RedriveDelivery(ctx context.Context, req RedriveRequest) (*Delivery, error) {
	var d Delivery
	return &d, c.call(ctx, bus.ServiceWebhooks, OpWebhookRedrive, req, &d)
}

// ContinueTaskRun answers a run waiting for input with its next turn's input.
func (c *Client) ContinueTaskRun(ctx context.Context, req ContinueTaskRunRequest) (*mesh.TaskRun, error) {
	return c.runCall(ctx, OpTaskContinue, req)
}

// CommitInputArtifact registers stored content as a file of a conversation's input.
func (c *Client) CommitInputArtifact(ctx context.Context, req CommitInputRequest) (*mesh.Artifact, error) {
	var a mesh.Artifact
	return &a, c.call(ctx, bus.ServiceArtifacts, OpArtifactCommitInput, req, &a)
}

// CreateA2AKey issues an A2A API key for an agent.
func (c *Client) CreateA2AKey(ctx context.Context, req CreateA2AKeyRequest) (*CreateA2AKeyResponse, error) {
	var r CreateA2AKeyResponse
	return &r, c.call(ctx, bus.ServiceCredentials, OpA2AKeyCreate, req, &r)
}

// ListA2AKeys lists an agent's A2A API keys.
func (c *Client) ListA2AKeys(ctx context.Context, agentID string) (*A2AKeyList, error) {
	var l A2AKeyList
	return &l, c.call(ctx, bus.ServiceCredentials, OpA2AKeyList, ListA2AKeysRequest{AgentID: agentID}, &l)
}

// RevokeA2AKey revokes one of an agent's A2A API keys.
func (c *Client) RevokeA2AKey(ctx context.Context, req RevokeA2AKeyRequest) error {
	return c.call(ctx, bus.ServiceCredentials, OpA2AKeyRevoke, req, nil)
}

// AuthenticateA2AKey resolves an A2A API key hash to its key.
func (c *Client) AuthenticateA2AKey(ctx context.Context, keyHash string) (*A2AKey, error) {
	var k A2AKey
	return &k, c.call(ctx, bus.ServiceCredentials, OpA2AKeyAuthenticate, AuthenticateA2AKeyRequest{KeyHash: keyHash}, &k)
}

// CreateRoutingRule adds a routing rule to an agent.
func (c *Client) CreateRoutingRule(ctx context.Context, req CreateRoutingRuleRequest) (*RoutingRule, error) {
	var r RoutingRule
	return &r, c.call(ctx, bus.ServiceDelegation, OpRuleCreate, req, &r)
}

// ListRoutingRules lists an agent's routing rules in the order they are tried.
func (c *Client) ListRoutingRules(ctx context.Context, agentID string) (*RoutingRuleList, error) {
	var l RoutingRuleList
	return &l, c.call(ctx, bus.ServiceDelegation, OpRuleList, ListRoutingRulesRequest{AgentID: agentID}, &l)
}

// DeleteRoutingRule removes one of an agent's routing rules.
func (c *Client) DeleteRoutingRule(ctx context.Context, req DeleteRoutingRuleRequest) error {
	return c.call(ctx, bus.ServiceDelegation, OpRuleDelete, req, nil)
}

// MatchRoutingRule asks whether a task for an agent is to be delegated.
func (c *Client) MatchRoutingRule(ctx context.Context, req MatchRequest) (*MatchResponse, error) {
	var r MatchResponse
	return &r, c.call(ctx, bus.ServiceDelegation, OpMatch, req, &r)
}

// TraceDelegation returns the delegation tree a run belongs to, from its root.
func (c *Client) TraceDelegation(ctx context.Context, taskRunID string) (*TraceNode, error) {
	var n TraceNode
	return &n, c.call(ctx, bus.ServiceDelegation, OpTrace, TraceRequest{TaskRunID: taskRunID}, &n)
}

// CreatePartner registers a partner platform.
func (c *Client) CreatePartner(ctx context.Context, req CreatePartnerRequest) (*CreatePartnerResponse, error) {
	var r CreatePartnerResponse
	return &r, c.call(ctx, bus.ServiceDelegation, OpPartnerCreate, req, &r)
}

// ListPartners lists partner platforms (never their secrets).
func (c *Client) ListPartners(ctx context.Context) (*PartnerList, error) {
	var l PartnerList
	return &l, c.call(ctx, bus.ServiceDelegation, OpPartnerList, ListPartnersRequest{}, &l)
}

// DeletePartner removes a partner platform.
func (c *Client) DeletePartner(ctx context.Context, partnerID string) error {
	return c.call(ctx, bus.ServiceDelegation, OpPartnerDelete, DeletePartnerRequest{PartnerID: partnerID}, nil)
}

// PartnerCallback hands a partner's signed callback to the delegation service.
func (c *Client) PartnerCallback(ctx context.Context, req PartnerCallbackRequest) error {
	return c.call(ctx, bus.ServiceDelegation, OpPartnerCallback, req, nil)
}

// DelegateClaim takes a delegated pending run for the delegation service.
func (c *Client) DelegateClaim(ctx context.Context, req DelegateClaimRequest) (*mesh.TaskRun, error) {
	return c.runCall(ctx, OpTaskDelegateClaim, req)
}

// DelegateLink records where a held run was delegated.
func (c *Client) DelegateLink(ctx context.Context, req DelegateLinkRequest) (*mesh.TaskRun, error) {
	return c.runCall(ctx, OpTaskDelegateLink, req)
}

// DelegateRenew extends the leases of held runs.
func (c *Client) DelegateRenew(ctx context.Context, req DelegateRenewRequest) (*RenewResponse, error) {
	var r RenewResponse
	return &r, c.call(ctx, bus.ServiceTaskQueue, OpTaskDelegateRenew, req, &r)
}

// DelegateProgress mirrors a delegate's progress on a held run.
func (c *Client) DelegateProgress(ctx context.Context, req DelegateProgressRequest) (*mesh.TaskRun, error) {
	return c.runCall(ctx, OpTaskDelegateProgress, req)
}

// DelegateEnd ends a held run with the delegate's outcome.
func (c *Client) DelegateEnd(ctx context.Context, req DelegateEndRequest) (*mesh.TaskRun, error) {
	return c.runCall(ctx, OpTaskDelegateEnd, req)
}
