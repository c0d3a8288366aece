package mesh

import "time"

// Agent is an agent account: the long-lived identity a runtime attaches to
// (seed 001 §2.1). A new machine re-pairs the same agent; it never creates a new one.
type Agent struct {
	ID           string  `json:"agent_id"`
	Name         string  `json:"name"`
	Description  string  `json:"description,omitempty"`
	Instructions string  `json:"instructions,omitempty"`
	Skills       []Skill `json:"skills,omitempty"`
	// Public lets anyone send tasks to the agent and read them through the
	// A2A endpoint without a credential (rate-limited per client address). Off by
	// default: the agent card is public, everything else needs a credential.
	Public bool `json:"public,omitempty"`
	// Delegation says which agents this agent may hand tasks to from inside
	// its work (the tools its runtime gives the host); nil: none.
	Delegation *DelegationPolicy `json:"delegation,omitempty"`
	// Budget limits what the agent's runs may spend; nil: no limit
	// (docs/usage.md, "Budgets").
	Budget *Budget `json:"budget,omitempty"`
	// ApprovalPolicy decides what the agent's hosts may do without asking
	// (docs/approvals.md); nil: every step a host asks about is denied, as
	// a host that cannot ask does.
	ApprovalPolicy *ApprovalPolicy `json:"approval_policy,omitempty"`
	// HomeRegion is the region that serves the agent: its runtime is given
	// that region's NATS servers first. Set at creation (by default the
	// region of the platform that created it); it changes only while none
	// of the agent's runs is pending, running or waiting for input.
	HomeRegion string    `json:"home_region"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	Revision   uint64    `json:"revision"`
}

// Skill is something an agent says it can do; the A2A agent card lists them.
type Skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Examples    []string `json:"examples,omitempty"`
	InputModes  []string `json:"input_modes,omitempty"`
	OutputModes []string `json:"output_modes,omitempty"`
}

// DelegationPolicy is who an agent may delegate to from inside its work: the
// agents named, and (Public) every public agent. The platform enforces it;
// routing rules, which the owner writes, need no policy.
type DelegationPolicy struct {
	// Agents are the ids of the agents it may delegate to.
	Agents []string `json:"agents,omitempty"`
	// Public also allows every agent whose A2A endpoint is public.
	Public bool `json:"public,omitempty"`
}

// Allows reports whether the policy lets its agent delegate to target.
func (p *DelegationPolicy) Allows(target *Agent) bool {
	if p == nil || target == nil {
		return false
	}
	if p.Public && target.Public {
		return true
	}
	for _, id := range p.Agents {
		if id == target.ID {
			return true
		}
	}
	return false
}
