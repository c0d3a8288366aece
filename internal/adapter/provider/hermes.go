package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/a2amesh/a2amesh/mesh"
)

// Hermes Agent (Nous Research), driven in one of two documented ways.
//
// One-shot mode (hermes_cli/oneshot.py, `hermes --help`):
//
//	hermes --usage-file <file> [-m <model>] [--resume <session id>] -z <prompt>
//
// -z prints only the final answer on stdout, auto-approves the agent's own
// tool prompts (nobody can answer them) and loads AGENTS.md from the
// working directory; the prompt is its value, so it travels on the command
// line. It has no system prompt flag, so instructions are prepended. There
// is no live progress from -z. --usage-file gets a JSON report after a run
// that reached the model, failed runs included: completed, failed, partial,
// interrupted, turn_exit_reason, failure, session_id, model, provider,
// estimated_cost_usd and token counts. Hermes versions differ in how they
// exit after an upstream failure (older ones exit 0 with the error text as
// the "answer"), so success is judged by the report: completed and not
// failed. Credentials are Hermes's own (hermes setup, ~/.hermes/.env).
//
// API server mode (website/docs/user-guide/features/api-server.md), when
// HermesConfig.APIURL is set: POST <url>/v1/chat/completions with
// "Authorization: Bearer <API_SERVER_KEY>", the instructions as a system
// message (layered on top of Hermes's own system prompt) and stream true.
// The answer streams as chat.completion.chunk events; tool activity comes
// as "event: hermes.tool.progress" (tool or name, label, status). An
// X-Hermes-Session-Id header continues a server-side session; without it
// each request stands alone.
var hermesHost = hostSpec{
	name:       "hermes",
	product:    "Hermes Agent",
	binary:     "hermes",
	install:    "install it with `curl -fsSL https://hermes-agent.nousresearch.com/install.sh | bash`",
	login:      "Hermes keeps its model credentials in its own configuration: run `hermes setup` once",
	loginFiles: []string{".hermes/config.yaml", ".hermes/.env"},
}

// HermesAPIKeyEnv holds the Hermes API server's bearer key; it is the
// variable Hermes itself reads for that key.
const HermesAPIKeyEnv = "API_SERVER_KEY"

// hermesUsageFile is the -z usage report, in the run directory so that it is
// neither an artifact nor left behind.
const hermesUsageFile = "hermes-usage.json"

// HermesConfig configures the Hermes provider.
type HermesConfig struct {
	HostConfig
	// Model, when set, is passed as -m (one-shot mode) or as the request's
	// model (API server mode).
	Model string
	// APIURL, when set, sends tasks to the Hermes API server at this base
	// URL (http://127.0.0.1:8642) instead of running hermes -z.
	APIURL string
	// APIKey is the API server's key, from API_SERVER_KEY; required with
	// APIURL. It is sent only in the Authorization header.
	APIKey string
	// HTTPClient sends API server requests. Default http.DefaultClient.
	HTTPClient *http.Client
}

// Hermes runs each task with Hermes Agent: hermes -z in the conversation's
// directory, or through the Hermes API server when one is configured.
type Hermes struct {
	cfg  HermesConfig
	host *cliHost  // one-shot mode
	api  *chatHost // API server mode
}

// NewHermes checks cfg: in one-shot mode that Hermes is installed, in API
// server mode that its key is set, naming the variable when it is not.
func NewHermes(cfg HermesConfig) (*Hermes, error) {
	if cfg.APIURL == "" {
		host, err := newCLIHost(hermesHost, cfg.HostConfig)
		if err != nil {
			return nil, err
		}
		return &Hermes{cfg: cfg, host: host}, nil
	}
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("%w: set %s to the Hermes API server key (the API_SERVER_KEY of ~/.hermes/.env)", ErrMissingCredential, HermesAPIKeyEnv)
	}
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if !strings.HasPrefix(cfg.APIURL, "http://") && !strings.HasPrefix(cfg.APIURL, "https://") {
		return nil, fmt.Errorf("Hermes API URL %q must start with http:// or https://", cfg.APIURL)
	}
	if cfg.MaxArtifactBytes <= 0 {
		cfg.MaxArtifactBytes = DefaultMaxArtifactBytes
	}
	api := &chatHost{sessions: cfg.Sessions, maxArtifactBytes: cfg.MaxArtifactBytes, redact: newRedactor(cfg.Env, cfg.APIKey)}
	return &Hermes{cfg: cfg, api: api}, nil
}

// Name returns "hermes".
func (h *Hermes) Name() string { return hermesHost.name }

// Run runs t with Hermes and returns when it is done or ctx ends; in
// one-shot mode, when hermes and everything it started are gone.
func (h *Hermes) Run(ctx context.Context, t *Task, progress func(Progress)) (*Result, error) {
	if h.api != nil {
		return h.api.run(ctx, t, progress, map[string]any{"host": "hermes"}, func(session string, text *textProgress, report func(string)) chatCall {
			return h.apiCall(t, session, text, report)
		})
	}
	return h.host.run(ctx, t, progress, func(resume string, _ func(string)) (invocation, error) {
		prompt, err := argPrompt(promptWithContext(t))
		if err != nil {
			return invocation{}, err
		}
		usage := filepath.Join(t.RunDir, hermesUsageFile)
		args := []string{"--usage-file", usage}
		if h.cfg.Model != "" {
			args = append(args, "-m", h.cfg.Model)
		}
		if resume != "" {
			args = append(args, "--resume", resume)
		}
		args = append(args, "-z", prompt)
		return invocation{args: args, parser: &hermesParser{usageFile: usage, stdout: cappedBuffer{max: DefaultMaxStdoutBytes}}}, nil
	})
}

// hermesUsage is the -z usage report.
type hermesUsage struct {
	Completed        *bool    `json:"completed"`
	Failed           bool     `json:"failed"`
	Partial          bool     `json:"partial"`
	Interrupted      bool     `json:"interrupted"`
	TurnExitReason   string   `json:"turn_exit_reason"`
	Failure          string   `json:"failure"`
	SessionID        string   `json:"session_id"`
	Model            string   `json:"model"`
	Provider         string   `json:"provider"`
	EstimatedCostUSD *float64 `json:"estimated_cost_usd"`
	InputTokens      *int64   `json:"input_tokens"`
	OutputTokens     *int64   `json:"output_tokens"`
	TotalTokens      *int64   `json:"total_tokens"`
	APICalls         *int64   `json:"api_calls"`
}

// hermesParser collects the answer -z prints and judges the run by the usage
// report.
type hermesParser struct {
	usageFile string
	stdout    cappedBuffer
}

// Write takes hermes's stdout: the answer.
func (p *hermesParser) Write(b []byte) (int, error) { return p.stdout.Write(b) }

func (p *hermesParser) outcome(exit error, stderrTail string) (hostOutcome, error) {
	text := strings.TrimSpace(string(p.stdout.buf))
	raw, err := os.ReadFile(p.usageFile)
	if errors.Is(err, fs.ErrNotExist) {
		if exit != nil {
			return hostOutcome{}, exitFailure("hermes", exit, firstNonEmpty(stderrTail, text), "")
		}
		return hostOutcome{}, fmt.Errorf("hermes wrote no usage report, so whether the run succeeded is unknown (is this Hermes too old for -z --usage-file?)%s", quoteIf(text))
	}
	var u hermesUsage
	if err != nil || json.Unmarshal(raw, &u) != nil {
		return hostOutcome{}, fmt.Errorf("hermes wrote an unreadable usage report%s", quoteIf(text))
	}
	if why := hermesFailure(&u); why != "" {
		// The answer of a failed run is usually the explanation.
		return hostOutcome{}, exitFailure("hermes", exit, joinNonEmpty(why, firstNonEmpty(u.Failure, text, stderrTail)), "")
	}
	if exit != nil {
		return hostOutcome{}, exitFailure("hermes", exit, "", stderrTail)
	}
	if p.stdout.overflow {
		return hostOutcome{}, fmt.Errorf("hermes: answer larger than %d bytes", DefaultMaxStdoutBytes)
	}
	meta := map[string]any{}
	for k, v := range map[string]any{"model": u.Model, "provider": u.Provider} {
		if v != "" {
			meta[k] = v
		}
	}
	if u.EstimatedCostUSD != nil {
		meta["estimated_cost_usd"] = *u.EstimatedCostUSD
	}
	usage := map[string]any{}
	for k, v := range map[string]*int64{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens, "total_tokens": u.TotalTokens, "api_calls": u.APICalls} {
		if v != nil {
			usage[k] = *v
		}
	}
	if len(usage) > 0 {
		meta["usage"] = usage
	}
	return hostOutcome{text: text, sessionID: u.SessionID, metadata: meta, usage: hermesUsageOf(&u)}, nil
}

// hermesUsageOf is the usage report in the shape of mesh.Usage; Hermes's
// estimated cost is the cost it gives.
func hermesUsageOf(u *hermesUsage) *mesh.Usage {
	out := &mesh.Usage{Model: u.Model, CostUSD: u.EstimatedCostUSD}
	if u.InputTokens != nil {
		out.InputTokens = *u.InputTokens
	}
	if u.OutputTokens != nil {
		out.OutputTokens = *u.OutputTokens
	}
	return checked(out)
}

// hermesFailure says why a usage report describes a failed run, or "".
func hermesFailure(u *hermesUsage) string {
	switch {
	case u.Interrupted:
		return "was interrupted"
	case u.Failed:
		return "failed"
	case u.Partial || (u.Completed != nil && !*u.Completed):
		return "stopped before completing the task" + parenIf(u.TurnExitReason)
	case u.Completed == nil:
		return "reported neither completion nor failure"
	}
	return ""
}

func parenIf(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func quoteIf(s string) string {
	if s == "" {
		return ""
	}
	return ": " + quoteShort(s)
}

// apiCall is t's request to the Hermes API server, continuing session when
// it is set. Tool activity is reported and starts a new passage of text.
func (h *Hermes) apiCall(t *Task, session string, text *textProgress, report func(string)) chatCall {
	model := h.cfg.Model
	if model == "" {
		model = "hermes-agent"
	}
	header := http.Header{}
	if session != "" {
		header.Set("X-Hermes-Session-Id", session)
	}
	return chatCall{
		server:   "the Hermes API server",
		url:      h.cfg.APIURL + "/v1/chat/completions",
		token:    h.cfg.APIKey,
		tokenEnv: HermesAPIKeyEnv,
		notFound: "is API_SERVER_ENABLED=true set for `hermes gateway`?",
		header:   header,
		body: map[string]any{"model": model, "stream": true, "messages": taskMessages(t),
			"stream_options": map[string]any{"include_usage": true}},
		client: h.cfg.HTTPClient,
		onEvent: func(name string, data []byte) {
			if name == "hermes.tool.progress" {
				text.reset()
				report(hermesToolProgress(data))
			}
		},
	}
}

// hermesToolProgress reads a hermes.tool.progress event: the tool's name
// and a label such as "Searching...".
func hermesToolProgress(data []byte) string {
	var ev struct {
		Tool   string `json:"tool"`
		Name   string `json:"name"`
		Label  string `json:"label"`
		Status string `json:"status"`
	}
	_ = decodeEvent(data, &ev)
	tool := firstNonEmpty(ev.Tool, ev.Name, "a tool")
	if ev.Status == "completed" {
		return "finished " + tool
	}
	if ev.Label != "" {
		return "using " + tool + ": " + ev.Label
	}
	return "using " + tool
}
