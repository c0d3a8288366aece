package a2aserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
)

// Security scheme names of agent cards.
const (
	schemeAPIKey = "apiKey"
	schemeBearer = "bearer"
)

// PresenceExtension is the URI of the extension the extended agent card
// uses to tell the agent's runtime presence and host type.
const PresenceExtension = "https://a2amesh.dev/extensions/runtime-presence/v1"

// Modes of what agents take and give.
var (
	inputModes  = []string{"text/plain", "application/json", "application/octet-stream"}
	outputModes = []string{"text/plain", "application/json", "application/octet-stream"}
)

// card is an agent's card: its account's name, description and skills, the
// platform's capabilities and security schemes, and an interface for each
// binding and version, all at the agent's one URL.
func (s *Server) card(agent *mesh.Agent) *a2a.AgentCard {
	base := s.agentURL(agent.ID)
	desc := agent.Description
	if desc == "" {
		desc = agent.Name + ", an agent on A2A Mesh"
	}
	card := &a2a.AgentCard{
		Name:        agent.Name,
		Description: desc,
		Version:     s.cfg.Version,
		Provider:    &a2a.AgentProvider{Org: "A2A Mesh", URL: s.cfg.PublicURL},
		SupportedInterfaces: []*a2a.AgentInterface{
			{URL: base, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2atask.Version10},
			{URL: base, ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: a2atask.Version10},
			{URL: base, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2atask.Version03},
			{URL: base, ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: a2atask.Version03},
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true, PushNotifications: !s.cfg.NoPush, ExtendedAgentCard: true},
		DefaultInputModes:  inputModes,
		DefaultOutputModes: outputModes,
		SecuritySchemes: a2a.NamedSecuritySchemes{
			schemeAPIKey: a2a.APIKeySecurityScheme{Location: a2a.APIKeySecuritySchemeLocationHeader, Name: admission.HeaderAPIKey,
				Description: "A per-agent API key; Authorization: Bearer <key> works too. " + whoNeedsOne(agent)},
			schemeBearer: a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", BearerFormat: "JWT",
				Description: "A JWT the platform signed for an agent, or one of the identity provider this platform trusts. " + whoNeedsOne(agent)},
		},
		SecurityRequirements: a2a.SecurityRequirementsOptions{
			{schemeAPIKey: a2a.SecuritySchemeScopes{}},
			{schemeBearer: a2a.SecuritySchemeScopes{}},
		},
		Skills: skills(agent),
	}
	if agent.Public {
		// An empty requirement makes security optional (the requirements
		// are OpenAPI's): a public agent takes callers without a
		// credential. A card has no requirements per operation, so the
		// schemes' descriptions tell which operations need a credential.
		card.SecurityRequirements = append(card.SecurityRequirements, a2a.SecurityRequirements{})
	}
	return card
}

// whoNeedsOne says, in the card's security schemes, which requests need a
// credential.
func whoNeedsOne(agent *mesh.Agent) string {
	if !agent.Public {
		return "Every request needs a credential."
	}
	return "This agent is public: sending messages and reading their tasks need no credential; " +
		"the extended agent card, canceling tasks and push notification configurations need one."
}

// skills are the account's skills on the card. An account without any gets
// one general skill, since spec 1.0 requires at least one.
func skills(agent *mesh.Agent) []a2a.AgentSkill {
	if len(agent.Skills) == 0 {
		return []a2a.AgentSkill{{
			ID: defaultSkillID, Name: agent.Name,
			Description: "Anything " + agent.Name + " does: describe the task in a message.",
			Tags:        []string{defaultSkillID},
		}}
	}
	out := make([]a2a.AgentSkill, 0, len(agent.Skills))
	for _, sk := range agent.Skills {
		tags := sk.Tags
		if tags == nil {
			tags = []string{}
		}
		desc := sk.Description
		if desc == "" {
			desc = sk.Name
		}
		out = append(out, a2a.AgentSkill{
			ID: sk.ID, Name: sk.Name, Description: desc, Tags: tags, Examples: sk.Examples,
			InputModes: sk.InputModes, OutputModes: sk.OutputModes,
		})
	}
	return out
}

// defaultSkillID is the id (and tag) of the skill of an agent without skills.
const defaultSkillID = "general"

// cardCache keeps each agent's card JSON for its account revision.
type cardCache struct {
	mu    sync.Mutex
	cards map[string]cachedCard
}

type cachedCard struct {
	rev  uint64
	body []byte
	etag string
}

func newCardCache() *cardCache { return &cardCache{cards: map[string]cachedCard{}} }

// cardJSON is the card as served: the 0.3-compatible form of the SDK's card
// conversion (a2acompat/a2av0), which carries the 1.0 fields
// (supportedInterfaces, capabilities.extendedAgentCard, typed security
// schemes) next to 0.3's (url, preferredTransport, additionalInterfaces,
// protocolVersion), so clients of both versions read it and each finds an
// interface it speaks.
func (s *Server) cardJSON(ctx context.Context, agent *mesh.Agent) (cachedCard, error) {
	s.cards.mu.Lock()
	c, ok := s.cards.cards[agent.ID]
	s.cards.mu.Unlock()
	if ok && c.rev == agent.Revision {
		return c, nil
	}
	body, err := compatJSON(ctx, s.card(agent))
	if err != nil {
		return cachedCard{}, err
	}
	sum := sha256.Sum256(body)
	c = cachedCard{rev: agent.Revision, body: body, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
	s.cards.mu.Lock()
	s.cards.cards[agent.ID] = c
	s.cards.mu.Unlock()
	return c, nil
}

// compatJSON is a card in the form both versions read: the SDK's
// 0.3-compatible conversion, with its security schemes in both versions'
// forms (dualSchemes) and its 0.3 interfaces each listed once
// (preferredFirst).
func compatJSON(ctx context.Context, card *a2a.AgentCard) ([]byte, error) {
	producer := a2av0.NewStaticAgentCardProducer(card).(a2asrv.AgentCardJSONProducer)
	body, err := producer.CardJSON(ctx)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, err
	}
	if err := dualSchemes(fields); err != nil {
		return nil, err
	}
	if err := preferredFirst(fields); err != nil {
		return nil, err
	}
	return json.MarshalIndent(fields, "", "  ")
}

// preferredFirst puts the preferred interface (url, preferredTransport)
// at the head of additionalInterfaces, which the conversion leaves out:
// 0.3 §5.5 has the list include it, so a client that reads only the list
// finds every interface, each once.
func preferredFirst(card map[string]json.RawMessage) error {
	var url, transport string
	if json.Unmarshal(card["url"], &url) != nil || json.Unmarshal(card["preferredTransport"], &transport) != nil {
		return nil
	}
	type iface struct {
		URL       string `json:"url"`
		Transport string `json:"transport"`
	}
	var rest []iface
	if raw, ok := card["additionalInterfaces"]; ok {
		if err := json.Unmarshal(raw, &rest); err != nil {
			return err
		}
	}
	list := []iface{{URL: url, Transport: transport}}
	for _, i := range rest {
		if i != list[0] {
			list = append(list, i)
		}
	}
	raw, err := json.Marshal(list)
	card["additionalInterfaces"] = raw
	return err
}

// dualSchemes makes the security schemes of the SDK's 0.3-compatible card
// readable by 1.0 parsers too. The conversion writes each scheme in the 0.3
// form (type, in, name) with the 1.0 object nested under "apiKey" or
// "http"; 1.0's card parser (the SDK's own default among them) knows the
// scheme only under its 1.0 name ("apiKeySecurityScheme",
// "httpAuthSecurityScheme") and refuses the card otherwise. The object is
// added under that name as well, which 0.3 parsers ignore.
func dualSchemes(card map[string]json.RawMessage) error {
	var schemes map[string]map[string]json.RawMessage
	if raw, ok := card["securitySchemes"]; ok {
		if err := json.Unmarshal(raw, &schemes); err != nil {
			return err
		}
	}
	for _, sc := range schemes {
		for compat, v1 := range map[string]string{"apiKey": "apiKeySecurityScheme", "http": "httpAuthSecurityScheme"} {
			if nested, ok := sc[compat]; ok {
				sc[v1] = nested
			}
		}
	}
	if schemes == nil {
		return nil
	}
	raw, err := json.Marshal(schemes)
	card["securitySchemes"] = raw
	return err
}

// serveCard serves an agent's card, to anyone: cacheable for a minute, with
// an ETag from its bytes so a client revalidates with If-None-Match.
func (s *Server) serveCard(w http.ResponseWriter, r *http.Request) {
	agent, err := s.agent(r.Context(), r.PathValue("agentId"))
	if err != nil {
		s.cfg.WriteError(w, r, err)
		return
	}
	c, err := s.cardJSON(r.Context(), agent)
	if err != nil {
		s.cfg.WriteError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "public, max-age=60")
	h.Set("ETag", c.etag)
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Vary", "Origin")
	if etagMatches(r.Header.Get("If-None-Match"), c.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
	_, _ = w.Write(c.body)
}

// etagMatches applies If-None-Match (a list of tags, or *).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// serveExtendedCard03 answers a 0.3 caller's extended card: the public
// card's form (compatJSON) with the runtime's presence. The 0.3
// transports' own conversion of a card drops its security schemes and
// requirements and lists each interface twice (once per version, all at
// one URL), so the endpoint writes this answer itself: the JSON-RPC result
// of request id, or (id nil from the REST route) the HTTP+JSON body.
func (s *Server) serveExtendedCard03(w http.ResponseWriter, r *http.Request, agent *mesh.Agent, id any) {
	card, err := s.extendedCard(r.Context(), agent)
	var body []byte
	if err == nil {
		body, err = compatJSON(r.Context(), card)
	}
	rpc := r.Method == http.MethodPost
	switch {
	case err != nil && rpc:
		writeRPCError(w, a2atask.Version03, id, toA2A(s.log, err), nil)
	case err != nil:
		writeRESTError(w, toA2A(s.log, err), nil)
	case rpc:
		writeJSONBody(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": id, "result": json.RawMessage(body)})
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}
}

// extendedCard is the card an authenticated caller gets: the public card
// with the runtime's presence and host type, as an extension of its
// capabilities.
func (s *Server) extendedCard(ctx context.Context, agent *mesh.Agent) (*a2a.AgentCard, error) {
	card := s.card(agent)
	l, err := s.client.ListRuntimes(ctx, agent.ID)
	if err != nil {
		return nil, err
	}
	params := map[string]any{"status": string(mesh.PresenceOffline)}
	for _, rt := range l.Runtimes {
		if rt.State != mesh.RuntimeActive {
			continue
		}
		params = map[string]any{"status": string(rt.Status), "host_type": rt.HostType, "host_label": rt.HostLabel, "runtime_id": rt.RuntimeID}
		if rt.LastHeartbeatAt != nil {
			params["last_heartbeat_at"] = rt.LastHeartbeatAt.UTC().Format("2006-01-02T15:04:05Z07:00")
		}
		break
	}
	card.Capabilities.Extensions = append(card.Capabilities.Extensions, a2a.AgentExtension{
		URI: PresenceExtension, Description: "Whether the agent's runtime is connected, and the agent host behind it.", Params: params,
	})
	return card, nil
}
