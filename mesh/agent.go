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
	// A2A door without a credential (rate-limited per client address). Off by
	// default: the agent card is public, everything else needs a credential.
	Public    bool      `json:"public,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Revision  uint64    `json:"revision"`
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
