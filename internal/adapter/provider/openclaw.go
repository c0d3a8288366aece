package provider

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// The OpenClaw gateway's OpenAI-compatible HTTP endpoint, as documented in
// OpenClaw's gateway reference (gateway/openai-http-api):
//
//	POST <gateway>/v1/chat/completions
//	Authorization: Bearer <gateway.auth.token>      (OPENCLAW_GATEWAY_TOKEN)
//	x-openclaw-agent-id: <agentId>
//	{"model": "openclaw/<agentId>", "stream": true, "messages": [...], "user": <session key>}
//
// The endpoint is disabled by default (gateway.http.endpoints.chatCompletions.enabled)
// and shares the gateway's port (18789 by default). A request runs as a
// normal gateway agent run. The agent is chosen by the model field, and by
// the x-openclaw-agent-id header for gateways that predate that form. Each
// request is a new session unless it carries an OpenAI "user" string, from
// which the gateway derives a stable session key: that is how a conversation
// resumes its session when sessions persist. With stream true the answer is
// Server-Sent Events of chat.completion.chunk objects ending with
// "data: [DONE]". The gateway accepts the shared secret of either auth mode
// as the bearer token, so OPENCLAW_GATEWAY_PASSWORD serves in password mode.
// A run's tools (the mesh's MCP server of the run) are the request's client
// tools ("tools", function tools): the gateway ends an answer that calls one
// with finish_reason "tool_calls", and the client sends the conversation
// again with the call's result as a "tool" message (chatCall.converse). The
// gateway's own MCP configuration (mcp.servers) is shared by all its
// sessions and lives in its config file, no place for a run's capability.
const (
	// OpenClawTokenEnv holds the gateway token (gateway.auth.token).
	OpenClawTokenEnv = "OPENCLAW_GATEWAY_TOKEN"
	// OpenClawPasswordEnv holds the gateway password, in password mode.
	OpenClawPasswordEnv = "OPENCLAW_GATEWAY_PASSWORD"
	// DefaultOpenClawGateway is the gateway's default local address.
	DefaultOpenClawGateway = "http://127.0.0.1:18789"
	// DefaultOpenClawAgent is the id of OpenClaw's default agent.
	DefaultOpenClawAgent = "main"
)

// OpenClawConfig configures the OpenClaw provider.
type OpenClawConfig struct {
	// GatewayURL is the gateway's base URL. Default DefaultOpenClawGateway.
	GatewayURL string
	// Token is the gateway's shared secret, from OPENCLAW_GATEWAY_TOKEN (or
	// OPENCLAW_GATEWAY_PASSWORD). Required. It is sent only in the
	// Authorization header.
	Token string
	// AgentID is the gateway agent that runs the tasks. Default
	// DefaultOpenClawAgent.
	AgentID string
	// Model, when set, overrides the agent's model (x-openclaw-model).
	Model string
	// Sessions, when set, keeps one gateway session per conversation; nil
	// runs every task in a new session.
	Sessions *SessionStore
	// MaxArtifactBytes caps each file in the output directory. Default
	// DefaultMaxArtifactBytes.
	MaxArtifactBytes int64
	// HTTPClient sends the requests. Default http.DefaultClient; the task's
	// context bounds every request.
	HTTPClient *http.Client
}

// OpenClaw sends each task to an agent of the local OpenClaw gateway and
// streams its answer back as progress.
type OpenClaw struct {
	cfg  OpenClawConfig
	host *chatHost
}

// NewOpenClaw checks cfg. It refuses to start without the gateway token,
// naming the variable it comes from.
func NewOpenClaw(cfg OpenClawConfig) (*OpenClaw, error) {
	if cfg.Token == "" {
		return nil, fmt.Errorf("%w: set %s to the OpenClaw gateway token (gateway.auth.token; %s in password mode)", ErrMissingCredential, OpenClawTokenEnv, OpenClawPasswordEnv)
	}
	if cfg.GatewayURL == "" {
		cfg.GatewayURL = DefaultOpenClawGateway
	}
	cfg.GatewayURL = strings.TrimRight(cfg.GatewayURL, "/")
	if !strings.HasPrefix(cfg.GatewayURL, "http://") && !strings.HasPrefix(cfg.GatewayURL, "https://") {
		return nil, fmt.Errorf("OpenClaw gateway URL %q must start with http:// or https://", cfg.GatewayURL)
	}
	if cfg.AgentID == "" {
		cfg.AgentID = DefaultOpenClawAgent
	}
	if cfg.MaxArtifactBytes <= 0 {
		cfg.MaxArtifactBytes = DefaultMaxArtifactBytes
	}
	host := &chatHost{sessions: cfg.Sessions, maxArtifactBytes: cfg.MaxArtifactBytes, redact: newRedactor(nil, cfg.Token)}
	return &OpenClaw{cfg: cfg, host: host}, nil
}

// Name returns "openclaw".
func (o *OpenClaw) Name() string { return "openclaw" }

// Run sends t to the gateway and returns when the answer is complete or ctx
// ends; ending ctx closes the request.
func (o *OpenClaw) Run(ctx context.Context, t *Task, progress func(Progress)) (*Result, error) {
	meta := map[string]any{"host": "openclaw", "agent_id": o.cfg.AgentID}
	tools, err := openMeshChatTools(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("openclaw: %w", err)
	}
	var offered chatTools
	if tools != nil {
		defer tools.close()
		offered = tools
	}
	return o.host.run(ctx, t, progress, meta, func(session string, _ *textProgress, report func(string)) chatCall {
		body := map[string]any{
			"model":    "openclaw/" + o.cfg.AgentID,
			"stream":   true,
			"messages": taskMessages(t),
			// The gateway reports a streamed answer's usage only when
			// asked (OpenAI's stream_options.include_usage).
			"stream_options": map[string]any{"include_usage": true},
		}
		if session != "" {
			body["user"] = session
		}
		header := http.Header{"X-Openclaw-Agent-Id": {o.cfg.AgentID}}
		if o.cfg.Model != "" {
			header.Set("X-Openclaw-Model", o.cfg.Model)
		}
		report("sent to OpenClaw agent " + o.cfg.AgentID)
		return chatCall{
			server:   "the OpenClaw gateway",
			url:      o.cfg.GatewayURL + "/v1/chat/completions",
			token:    o.cfg.Token,
			tokenEnv: OpenClawTokenEnv,
			notFound: "enable it with gateway.http.endpoints.chatCompletions.enabled: true in the OpenClaw config",
			header:   header,
			body:     body,
			client:   o.cfg.HTTPClient,
			tools:    offered,
		}
	})
}
