package meshapi

import (
	"context"

	"github.com/a2amesh/a2amesh/mesh"
)

// Agent operations (service "agents").
const (
	OpAgentCreate = "create"
	OpAgentGet    = "get"
	OpAgentList   = "list"
	OpAgentUpdate = "update"
	OpAgentDelete = "delete"
)

// DeleteAgentRequest deletes an agent account: its runtimes are revoked,
// its open runs canceled; its finished runs,
// artifacts and events stay.
type DeleteAgentRequest struct {
	AgentID string `json:"agent_id"`
}

// DeleteAgentResponse says what deleting an agent did.
type DeleteAgentResponse struct {
	AgentID string `json:"agent_id"`
	// RevokedRuntimes counts the runtimes the delete revoked.
	RevokedRuntimes int `json:"revoked_runtimes"`
	// CanceledTaskRuns counts the open runs (pending, running,
	// input-required) canceled with the reason "agent deleted".
	CanceledTaskRuns int `json:"canceled_task_runs"`
}

// CreateAgentRequest creates an agent account.
type CreateAgentRequest struct {
	Name         string       `json:"name"`
	Description  string       `json:"description,omitempty"`
	Instructions string       `json:"instructions,omitempty"`
	Skills       []mesh.Skill `json:"skills,omitempty"`
	// Public opens the agent's A2A endpoint to callers without a credential.
	Public bool `json:"public,omitempty"`
	// Delegation is who the agent may delegate to from inside its work.
	Delegation *mesh.DelegationPolicy `json:"delegation,omitempty"`
	// Budget limits what the agent's runs may spend.
	Budget *mesh.Budget `json:"budget,omitempty"`
	// ApprovalPolicy decides what the agent's hosts may do without asking.
	ApprovalPolicy *mesh.ApprovalPolicy `json:"approval_policy,omitempty"`
	// HomeRegion is the agent's home region; empty: the region of the
	// agents service that creates it.
	HomeRegion string `json:"home_region,omitempty"`
}

// UpdateAgentRequest edits an agent; nil fields stay as they are.
type UpdateAgentRequest struct {
	AgentID      string        `json:"agent_id"`
	Name         *string       `json:"name,omitempty"`
	Description  *string       `json:"description,omitempty"`
	Instructions *string       `json:"instructions,omitempty"`
	Skills       *[]mesh.Skill `json:"skills,omitempty"`
	Public       *bool         `json:"public,omitempty"`
	// Delegation replaces the agent's delegation policy; an empty policy
	// ({}) allows no one.
	Delegation *mesh.DelegationPolicy `json:"delegation,omitempty"`
	// Budget replaces the agent's budget; an empty budget ({}) removes
	// every limit.
	Budget *mesh.Budget `json:"budget,omitempty"`
	// ApprovalPolicy replaces the agent's approval policy; an empty
	// policy ({}) removes it (every step asked about is denied).
	ApprovalPolicy *mesh.ApprovalPolicy `json:"approval_policy,omitempty"`
	// HomeRegion moves the agent to another region; refused (CONFLICT)
	// while the agent has a run that has not ended.
	HomeRegion *string `json:"home_region,omitempty"`
}

// GetAgentRequest names an agent.
type GetAgentRequest struct {
	AgentID string `json:"agent_id"`
}

// ListAgentsRequest lists agents, oldest first.
type ListAgentsRequest struct{}

// AgentList is a list of agents.
type AgentList struct {
	Agents []mesh.Agent `json:"agents"`
}

// CreateAgent creates an agent account.
func (c *Client) CreateAgent(ctx context.Context, req CreateAgentRequest) (*mesh.Agent, error) {
	return Send(ctx, c, OpAgentsCreate, req)
}

// GetAgent returns an agent account.
func (c *Client) GetAgent(ctx context.Context, agentID string) (*mesh.Agent, error) {
	return Send(ctx, c, OpAgentsGet, GetAgentRequest{AgentID: agentID})
}

// ListAgents lists agent accounts.
func (c *Client) ListAgents(ctx context.Context) (*AgentList, error) {
	return Send(ctx, c, OpAgentsList, ListAgentsRequest{})
}

// UpdateAgent edits an agent account.
func (c *Client) UpdateAgent(ctx context.Context, req UpdateAgentRequest) (*mesh.Agent, error) {
	return Send(ctx, c, OpAgentsUpdate, req)
}

// DeleteAgent deletes an agent account (see DeleteAgentRequest).
func (c *Client) DeleteAgent(ctx context.Context, agentID string) (*DeleteAgentResponse, error) {
	return Send(ctx, c, OpAgentsDelete, DeleteAgentRequest{AgentID: agentID})
}
