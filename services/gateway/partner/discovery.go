package partner

import (
	"net/http"
)

// card is the platform's agent card at GET /a2a/discovery (seed 003): who
// the platform is (agentId, agentName, agentVersion: configurable), where
// its routes are, how to authenticate, and, as skills, the agents the
// caller reaches (each with its own A2A endpoint).
type card struct {
	AgentID        string            `json:"agentId"`
	AgentName      string            `json:"agentName"`
	AgentVersion   string            `json:"agentVersion"`
	Description    string            `json:"description"`
	URL            string            `json:"url"`
	Capabilities   cardCapabilities  `json:"capabilities"`
	Methods        []string          `json:"methods"`
	Skills         []cardSkill       `json:"skills"`
	Authentication cardAuth          `json:"authentication"`
	Endpoints      map[string]string `json:"endpoints"`
	RateLimit      map[string]int    `json:"rateLimit"`
}

type cardCapabilities struct {
	Streaming         bool     `json:"streaming"`
	Webhooks          bool     `json:"webhooks"`
	TaskStates        []string `json:"taskStates"`
	LongRunningTasks  bool     `json:"longRunningTasks"`
	JSONRPCVersion    string   `json:"jsonrpcVersion"`
	StateTransitions  bool     `json:"stateTransitionHistory"`
	ProtocolStandards []string `json:"protocolStandards"`
}

type cardSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags"`
	URL         string   `json:"url"`
}

type cardAuth struct {
	Schemes      []string `json:"schemes"`
	APIKeyHeader string   `json:"apiKeyHeader"`
}

// discovery is GET /a2a/discovery: {"agentCard": {...}}. It needs no
// credential; the skills are the agents the credential (if any) reaches.
func (d *Endpoint) discovery(w http.ResponseWriter, r *http.Request) {
	c, err := d.cfg.Admission.Admit(w, r)
	if err != nil {
		writeError(w, classify(d.cfg.Logger, err, "Failed to retrieve agent card"))
		return
	}
	skills := []cardSkill{}
	for _, a := range d.agentList(r.Context(), c) {
		tags := []string{"agent"}
		for _, s := range a.Skills {
			tags = append(tags, s.ID)
		}
		skills = append(skills, cardSkill{ID: a.AgentID, Name: a.Name, Description: a.Description, Tags: tags, URL: a.URL})
	}
	base := d.cfg.BaseURL
	writeJSON(w, http.StatusOK, map[string]any{"agentCard": card{
		AgentID: d.cfg.CardID, AgentName: d.cfg.CardName, AgentVersion: d.cfg.CardVersion,
		Description: "A2A Mesh: agents that people run on their own machines, each reachable as an A2A agent. Each skill is an agent you may reach.",
		URL:         base + "/a2a",
		Capabilities: cardCapabilities{
			Streaming: true, Webhooks: true, LongRunningTasks: true, JSONRPCVersion: "2.0",
			TaskStates:        []string{"submitted", "working", "input-required", "completed", "failed", "canceled"},
			ProtocolStandards: []string{"a2a-1.0", "a2a-0.3"},
		},
		Methods:        []string{methodSend, methodGet, methodCancel, methodAgentList},
		Skills:         skills,
		Authentication: cardAuth{Schemes: []string{"apiKey", "bearer"}, APIKeyHeader: "X-API-Key"},
		Endpoints: map[string]string{
			"discovery": base + "/a2a/discovery", "message": base + "/a2a/message", "task": base + "/a2a/task",
			"status": base + "/a2a/status", "webhook": d.cfg.WebhookURL, "health": d.cfg.HealthURL,
		},
		RateLimit: map[string]int{"requestsPerMinute": d.cfg.Admission.RateLimitPerMinute()},
	}})
}
