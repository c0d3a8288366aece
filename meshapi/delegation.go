package meshapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
)

// Delegation operations (service "delegation"): routing rules, partner
// platforms, the match the task queue asks for at creation, delegation
// traces and partners' callbacks.
const (
	OpRuleCreate      = "rule_create"
	OpRuleList        = "rule_list"
	OpRuleDelete      = "rule_delete"
	OpMatch           = "match"
	OpTrace           = "trace"
	OpPartnerCreate   = "partner_create"
	OpPartnerList     = "partner_list"
	OpPartnerDelete   = "partner_delete"
	OpPartnerCallback = "partner_callback"
)

// Task-queue operations of the delegation service, which holds delegated
// runs as a runtime holds claimed ones (a platform-side claim: status
// running, no runtime id, a lease the delegation service renews).
const (
	OpTaskDelegateOffer    = "delegate_offer"
	OpTaskDelegateClaim    = "delegate_claim"
	OpTaskDelegateLink     = "delegate_link"
	OpTaskDelegateRenew    = "delegate_renew"
	OpTaskDelegateProgress = "delegate_progress"
	OpTaskDelegateEnd      = "delegate_end"
)

// RoutingRule sends an agent's matching tasks to another agent (or a
// partner platform) instead of the agent's own runtime.
type RoutingRule struct {
	RuleID  string `json:"rule_id"`
	AgentID string `json:"agent_id"`
	// Name labels the rule for people.
	Name  string    `json:"name,omitempty"`
	Match RuleMatch `json:"match"`
	// Priority orders an agent's rules: higher first, ties by creation.
	Priority  int        `json:"priority"`
	Target    RuleTarget `json:"target"`
	CreatedAt time.Time  `json:"created_at"`
}

// RuleMatch says which tasks a rule takes: exactly one of keywords (any of
// them in the task text, case-insensitive), a regular expression over the
// task text (Go RE2 syntax), or a skill the task asks for.
type RuleMatch struct {
	Keywords []string `json:"keywords,omitempty"`
	Regex    string   `json:"regex,omitempty"`
	Skill    string   `json:"skill,omitempty"`
}

// RuleTarget is where matching tasks go: an agent of this platform, or a
// registered partner platform (seed 003 routes at URL).
type RuleTarget struct {
	AgentID   string `json:"agent_id,omitempty"`
	PartnerID string `json:"partner_id,omitempty"`
	URL       string `json:"url,omitempty"`
}

// CreateRoutingRuleRequest adds a rule to an agent.
type CreateRoutingRuleRequest struct {
	AgentID  string     `json:"agent_id"`
	Name     string     `json:"name,omitempty"`
	Match    RuleMatch  `json:"match"`
	Priority int        `json:"priority"`
	Target   RuleTarget `json:"target"`
}

// ListRoutingRulesRequest lists an agent's rules.
type ListRoutingRulesRequest struct {
	AgentID string `json:"agent_id"`
}

// RoutingRuleList is an agent's rules in the order they are tried.
type RoutingRuleList struct {
	Rules []RoutingRule `json:"rules"`
}

// DeleteRoutingRuleRequest removes one of an agent's rules.
type DeleteRoutingRuleRequest struct {
	AgentID string `json:"agent_id"`
	RuleID  string `json:"rule_id"`
}

// MatchRequest asks whether a task for an agent is to be delegated.
type MatchRequest struct {
	AgentID string `json:"agent_id"`
	Text    string `json:"text,omitempty"`
	Skill   string `json:"skill,omitempty"`
}

// MatchResponse names the first rule that matched, or none.
type MatchResponse struct {
	Rule *RoutingRule `json:"rule,omitempty"`
}

// TraceRequest names any run of a delegation tree.
type TraceRequest struct {
	TaskRunID string `json:"task_run_id"`
}

// TraceNode is one hop of a delegation: a run (or a partner's task) and the
// runs it delegated to.
type TraceNode struct {
	TaskRunID      string         `json:"task_run_id,omitempty"`
	AgentID        string         `json:"agent_id,omitempty"`
	AgentName      string         `json:"agent_name,omitempty"`
	PartnerID      string         `json:"partner_id,omitempty"`
	RemoteTaskID   string         `json:"remote_task_id,omitempty"`
	Status         string         `json:"status"`
	CreatedAt      *time.Time     `json:"created_at,omitempty"`
	ClaimedAt      *time.Time     `json:"claimed_at,omitempty"`
	EndedAt        *time.Time     `json:"ended_at,omitempty"`
	DurationMS     *int64         `json:"duration_ms,omitempty"`
	IdempotencyKey string         `json:"idempotency_key,omitempty"`
	Error          *mesh.RunError `json:"error,omitempty"`
	// Usage is the run's own share of what the tree spent; UsageTotal
	// is it with everything below it (mesh.TaskRun).
	Usage      *mesh.Usage `json:"usage,omitempty"`
	UsageTotal *mesh.Usage `json:"usage_total,omitempty"`
	Children   []TraceNode `json:"children"`
}

// Partner is a partner platform that speaks seed 003's routes: tasks may be
// delegated to it, and it reports back on POST /a2a/webhook, signed with
// the shared secret.
type Partner struct {
	PartnerID string `json:"partner_id"`
	Name      string `json:"name"`
	// URL is the partner's base URL; tasks go to <URL>/a2a/task.
	URL string `json:"url"`
	// SecretHint is the shared secret's last characters.
	SecretHint string `json:"secret_hint"`
	// HasAPIKey says whether calls to the partner carry an API key.
	HasAPIKey bool      `json:"has_api_key"`
	CreatedAt time.Time `json:"created_at"`
}

// CreatePartnerRequest registers a partner platform.
type CreatePartnerRequest struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// Secret is the shared secret of the partner's callbacks (16+ bytes);
	// empty generates one.
	Secret string `json:"secret,omitempty"`
	// APIKey is what this platform sends the partner as X-API-Key.
	APIKey string `json:"api_key,omitempty"`
}

// CreatePartnerResponse carries the shared secret, shown once.
type CreatePartnerResponse struct {
	Partner
	Secret string `json:"secret"`
}

// ListPartnersRequest lists partners.
type ListPartnersRequest struct{}

// PartnerList is every partner, oldest first.
type PartnerList struct {
	Partners []Partner `json:"partners"`
}

// DeletePartnerRequest removes a partner.
type DeletePartnerRequest struct {
	PartnerID string `json:"partner_id"`
}

// PartnerCallbackRequest is a partner's signed callback as the gateway
// received it; the delegation service checks the signature.
type PartnerCallbackRequest struct {
	PartnerID string `json:"partner_id"`
	Timestamp string `json:"timestamp"`
	Signature string `json:"signature"`
	Body      []byte `json:"body"`
}

// DelegateClaimRequest takes a delegated pending run for the delegation
// service.
type DelegateClaimRequest struct {
	TaskRunID string `json:"task_run_id"`
	// Attempt is the attempt of the queue message (0: whatever is next).
	Attempt int `json:"attempt,omitempty"`
}

// DelegateLinkRequest records where a held run was delegated (the
// delegate's run, or the partner's task) and announces it.
type DelegateLinkRequest struct {
	TaskRunID   string          `json:"task_run_id"`
	DelegatedTo mesh.Delegation `json:"delegated_to"`
}

// DelegateRenewRequest extends the leases of runs the delegation service holds.
type DelegateRenewRequest struct {
	TaskRunIDs []string `json:"task_run_ids"`
}

// DelegateProgressRequest mirrors the delegate's progress on the held run.
type DelegateProgressRequest struct {
	TaskRunID string   `json:"task_run_id"`
	Message   string   `json:"message,omitempty"`
	Percent   *float64 `json:"percent,omitempty"`
	// RemoteState records a partner task's state (seed 003 names).
	RemoteState string `json:"remote_state,omitempty"`
}

// DelegateEndRequest ends a held run with the delegate's outcome:
// completed with its output, failed with its error, canceled, or
// input-required with its question.
type DelegateEndRequest struct {
	TaskRunID string          `json:"task_run_id"`
	Status    mesh.Status     `json:"status"`
	Output    json.RawMessage `json:"output,omitempty"`
	Error     *mesh.RunError  `json:"error,omitempty"`
	// RemoteState records the partner task's state that ended the run.
	RemoteState string `json:"remote_state,omitempty"`
}

// onRule binds {agentId} and {ruleId}.
var onRule = map[string]string{"agentId": "agent_id", "ruleId": "rule_id"}

// The delegation service's operations: an agent's routing rules and the
// partner platforms, for their owner; a run's delegation trace; the rule
// match the task queue asks and the partner callbacks the gateway hands on.
var (
	OpRulesCreate = define[CreateRoutingRuleRequest, RoutingRule](OpInfo{Name: OpRuleCreate, Service: bus.ServiceDelegation, Caller: CallerOwner,
		REST: route(http.MethodPost, "/agent-accounts/{agentId}/routing-rules", http.StatusCreated, onAgent)})
	OpRulesList = define[ListRoutingRulesRequest, RoutingRuleList](OpInfo{Name: OpRuleList, Service: bus.ServiceDelegation, Caller: CallerOwner, Idempotent: true,
		REST: get("/agent-accounts/{agentId}/routing-rules", onAgent)})
	OpRulesDelete = define[DeleteRoutingRuleRequest, Empty](OpInfo{Name: OpRuleDelete, Service: bus.ServiceDelegation, Caller: CallerOwner, Idempotent: true,
		REST: route(http.MethodDelete, "/agent-accounts/{agentId}/routing-rules/{ruleId}", http.StatusNoContent, onRule)})
	OpRulesMatch      = define[MatchRequest, MatchResponse](OpInfo{Name: OpMatch, Service: bus.ServiceDelegation, Caller: CallerPlatform, Idempotent: true})
	OpDelegationTrace = define[TraceRequest, TraceNode](OpInfo{Name: OpTrace, Service: bus.ServiceDelegation, Caller: CallerOwner, Idempotent: true,
		REST: get("/task-runs/{taskRunId}/trace", onRun)})
	// The answer carries the shared secret, shown this once.
	OpPartnersCreate = define[CreatePartnerRequest, CreatePartnerResponse](OpInfo{Name: OpPartnerCreate, Service: bus.ServiceDelegation, Caller: CallerOwner,
		REST: noStore(route(http.MethodPost, "/a2a/partners", http.StatusCreated, nil))})
	OpPartnersList = define[ListPartnersRequest, PartnerList](OpInfo{Name: OpPartnerList, Service: bus.ServiceDelegation, Caller: CallerOwner, Idempotent: true,
		REST: get("/a2a/partners", nil)})
	OpPartnersDelete = define[DeletePartnerRequest, Empty](OpInfo{Name: OpPartnerDelete, Service: bus.ServiceDelegation, Caller: CallerOwner, Idempotent: true,
		REST: route(http.MethodDelete, "/a2a/partners/{partnerId}", http.StatusNoContent, map[string]string{"partnerId": "partner_id"})})
	// A partner's signed callback, which the gateway's partner route hands
	// on as it came: the signature is checked here.
	OpPartnersCallback = define[PartnerCallbackRequest, Empty](OpInfo{Name: OpPartnerCallback, Service: bus.ServiceDelegation, Caller: CallerPlatform})
)

// The task queue's operations for the delegation service, which holds a
// delegated run the way a runtime holds a claimed one.
var (
	OpDelegatedOffer    = define[OfferRequest, OfferResponse](OpInfo{Name: OpTaskDelegateOffer, Service: bus.ServiceTaskQueue, Caller: CallerPlatform, Waits: true})
	OpDelegatedClaim    = define[DelegateClaimRequest, TaskRunReply](OpInfo{Name: OpTaskDelegateClaim, Service: bus.ServiceTaskQueue, Caller: CallerPlatform, Idempotent: true})
	OpDelegatedLink     = define[DelegateLinkRequest, TaskRunReply](OpInfo{Name: OpTaskDelegateLink, Service: bus.ServiceTaskQueue, Caller: CallerPlatform, Idempotent: true})
	OpDelegatedRenew    = define[DelegateRenewRequest, RenewResponse](OpInfo{Name: OpTaskDelegateRenew, Service: bus.ServiceTaskQueue, Caller: CallerPlatform, Idempotent: true})
	OpDelegatedProgress = define[DelegateProgressRequest, TaskRunReply](OpInfo{Name: OpTaskDelegateProgress, Service: bus.ServiceTaskQueue, Caller: CallerPlatform})
	OpDelegatedEnd      = define[DelegateEndRequest, TaskRunReply](OpInfo{Name: OpTaskDelegateEnd, Service: bus.ServiceTaskQueue, Caller: CallerPlatform, Idempotent: true})
)

// CreateRoutingRule adds a routing rule to an agent.
func (c *Client) CreateRoutingRule(ctx context.Context, req CreateRoutingRuleRequest) (*RoutingRule, error) {
	return Send(ctx, c, OpRulesCreate, req)
}

// ListRoutingRules lists an agent's routing rules in the order they are tried.
func (c *Client) ListRoutingRules(ctx context.Context, agentID string) (*RoutingRuleList, error) {
	return Send(ctx, c, OpRulesList, ListRoutingRulesRequest{AgentID: agentID})
}

// DeleteRoutingRule removes one of an agent's routing rules.
func (c *Client) DeleteRoutingRule(ctx context.Context, req DeleteRoutingRuleRequest) error {
	_, err := Send(ctx, c, OpRulesDelete, req)
	return err
}

// MatchRoutingRule asks whether a task for an agent is to be delegated.
func (c *Client) MatchRoutingRule(ctx context.Context, req MatchRequest) (*MatchResponse, error) {
	return Send(ctx, c, OpRulesMatch, req)
}

// TraceDelegation returns the delegation tree a run belongs to, from its root.
func (c *Client) TraceDelegation(ctx context.Context, taskRunID string) (*TraceNode, error) {
	return Send(ctx, c, OpDelegationTrace, TraceRequest{TaskRunID: taskRunID})
}

// CreatePartner registers a partner platform.
func (c *Client) CreatePartner(ctx context.Context, req CreatePartnerRequest) (*CreatePartnerResponse, error) {
	return Send(ctx, c, OpPartnersCreate, req)
}

// ListPartners lists partner platforms (never their secrets).
func (c *Client) ListPartners(ctx context.Context) (*PartnerList, error) {
	return Send(ctx, c, OpPartnersList, ListPartnersRequest{})
}

// DeletePartner removes a partner platform.
func (c *Client) DeletePartner(ctx context.Context, partnerID string) error {
	_, err := Send(ctx, c, OpPartnersDelete, DeletePartnerRequest{PartnerID: partnerID})
	return err
}

// PartnerCallback hands a partner's signed callback to the delegation service.
func (c *Client) PartnerCallback(ctx context.Context, req PartnerCallbackRequest) error {
	_, err := Send(ctx, c, OpPartnersCallback, req)
	return err
}

// DelegateOffer waits up to req.Wait for delegated pending runs and names
// them; ctx must allow the wait.
func (c *Client) DelegateOffer(ctx context.Context, req OfferRequest) ([]Offer, error) {
	r, err := Send(ctx, c, OpDelegatedOffer, req)
	if err != nil {
		return nil, err
	}
	return r.Offers, nil
}

// DelegateClaim takes a delegated pending run for the delegation service.
func (c *Client) DelegateClaim(ctx context.Context, req DelegateClaimRequest) (*mesh.TaskRun, error) {
	return runOf(Send(ctx, c, OpDelegatedClaim, req))
}

// DelegateLink records where a held run was delegated.
func (c *Client) DelegateLink(ctx context.Context, req DelegateLinkRequest) (*mesh.TaskRun, error) {
	return runOf(Send(ctx, c, OpDelegatedLink, req))
}

// DelegateRenew extends the leases of held runs.
func (c *Client) DelegateRenew(ctx context.Context, req DelegateRenewRequest) (*RenewResponse, error) {
	return Send(ctx, c, OpDelegatedRenew, req)
}

// DelegateProgress mirrors a delegate's progress on a held run.
func (c *Client) DelegateProgress(ctx context.Context, req DelegateProgressRequest) (*mesh.TaskRun, error) {
	return runOf(Send(ctx, c, OpDelegatedProgress, req))
}

// DelegateEnd ends a held run with the delegate's outcome.
func (c *Client) DelegateEnd(ctx context.Context, req DelegateEndRequest) (*mesh.TaskRun, error) {
	return runOf(Send(ctx, c, OpDelegatedEnd, req))
}
