package provider

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
)

// Gemini CLI in headless mode, as documented in its headless reference and
// defined in packages/core/src/output/types.ts:
//
//	gemini -o stream-json [--approval-mode <mode>] [-m <model>] [-r <session id>]   < prompt
//
// With stdin not a terminal the CLI runs headless and reads the prompt from
// stdin, so a long task never meets the command-line limit. Gemini CLI has
// no flag to add to its system prompt (GEMINI_SYSTEM_MD replaces it whole),
// so instructions are prepended to the prompt. stream-json prints one event
// per line: init (session_id, model), message (role, content, delta: true
// for streamed assistant chunks), tool_use (tool_name, tool_id,
// parameters), tool_result (tool_id, status, output, error), error
// (severity warning or error, message) and result (status success or
// error, error.message, stats). stream-json has no final answer field (the
// json format's "response" is the accumulated assistant text), so the answer
// is the assistant messages put together, a blank line between the
// passages that tool calls separate. Exit codes (packages/core/src/utils/
// errors.ts, Fatal*Error): 0 success, 1 error, 41 authentication, 42 input,
// 44 sandbox, 52 configuration, 53 turn limit, 54 fatal tool error, 55
// untrusted workspace, 130 cancelled; the host's own message is on stderr,
// in colour. Since 0.5x a headless run refuses a folder the user has not
// trusted (exit 55); the conversation folder is the adapter's own, so it is
// trusted with GEMINI_CLI_TRUST_WORKSPACE=true, which every version reads
// (older ones ignore it). Retries of the model API are reported only on
// stderr ("Attempt 1 failed with status 500. Retrying with backoff...").
// Credentials: GEMINI_API_KEY (or GOOGLE_API_KEY with Vertex AI) in the
// environment, or a sign-in cached by an interactive run.
var geminiHost = hostSpec{
	name:       "gemini",
	product:    "Gemini CLI",
	binary:     "gemini",
	install:    "install it with `npm install -g @google/gemini-cli`",
	keys:       []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA"},
	login:      "or sign in with Google once by running `gemini` interactively, which caches the credential for headless runs",
	loginFiles: []string{".gemini/oauth_creds.json"},
}

// geminiExitReasons are Gemini CLI's documented headless exit codes.
var geminiExitReasons = map[int]string{
	41:  "could not authenticate: set GEMINI_API_KEY in the adapter's environment, or sign in once by running gemini",
	42:  "refused the input (invalid prompt or arguments)",
	44:  "could not start its sandbox",
	52:  "has a configuration error",
	53:  "stopped at its turn limit (maxSessionTurns)",
	54:  "hit a fatal tool error",
	55:  "does not trust the conversation folder",
	130: "was cancelled",
}

// geminiTrustEnv trusts the conversation folder for a headless run.
const geminiTrustEnv = "GEMINI_CLI_TRUST_WORKSPACE=true"

// geminiRetry matches Gemini CLI's retry notices on stderr.
var geminiRetry = regexp.MustCompile(`Attempt (\d+) failed(?: with status (\d+)| with (\S+) error)?[^.]*\. Retrying`)

// geminiRetryProgress turns a retry notice into a progress message, or "".
func geminiRetryProgress(line string) string {
	m := geminiRetry.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	msg := "model API retry " + m[1]
	if reason := firstNonEmpty(m[2], m[3]); reason != "" {
		msg += " (HTTP " + reason + ")"
	}
	return msg
}

// GeminiConfig configures the Gemini CLI provider.
type GeminiConfig struct {
	HostConfig
	// ApprovalMode is passed as --approval-mode: default, auto_edit, yolo or
	// plan. Empty keeps Gemini CLI's own setting, under which a headless run
	// cannot approve edits. ApprovalModeMesh has the mesh decide every
	// tool call through ApproveHook (gemini_approval.go); a run without the
	// mesh's tools then runs with default.
	ApprovalMode string
	// ApproveHook is the command (argv) Gemini CLI runs as its hook
	// before each tool call under ApprovalModeMesh: the adapter's own
	// approve-hook, which answers with ApproveHook.
	ApproveHook []string
	// Model, when set, is passed as -m.
	Model string
}

// Gemini runs each task with Gemini CLI in headless mode in the
// conversation's directory. Tool calls and streamed assistant text become
// progress reports.
type Gemini struct {
	cfg  GeminiConfig
	host *cliHost
}

// NewGemini checks that Gemini CLI is installed. It does not require an API
// key: Gemini CLI can use a cached Google sign-in instead.
func NewGemini(cfg GeminiConfig) (*Gemini, error) {
	if cfg.ApprovalMode == ApprovalModeMesh && len(cfg.ApproveHook) == 0 {
		return nil, errors.New("gemini: approval mode " + ApprovalModeMesh + " needs the approval hook's command")
	}
	host, err := newCLIHost(geminiHost, cfg.HostConfig)
	if err != nil {
		return nil, err
	}
	return &Gemini{cfg: cfg, host: host}, nil
}

// Name returns "gemini".
func (g *Gemini) Name() string { return geminiHost.name }

// Run runs t with Gemini CLI and returns when it and everything it started
// are gone.
func (g *Gemini) Run(ctx context.Context, t *Task, progress func(Progress)) (*Result, error) {
	restore := func() {}
	defer func() { restore() }()
	return g.host.run(ctx, t, progress, func(resume string, report func(string)) (invocation, error) {
		var hook []string
		if g.cfg.ApprovalMode == ApprovalModeMesh {
			hook = g.cfg.ApproveHook
		}
		tools, undo, err := geminiTools(t, hook)
		if err != nil {
			return invocation{}, err
		}
		restore = undo
		return invocation{
			args:   g.args(resume, t.Request.Tools != nil),
			stdin:  promptWithContext(t),
			parser: newGeminiParser(report),
			env:    append([]string{geminiTrustEnv}, tools...),
			stderrLine: func(line string) {
				if msg := geminiRetryProgress(line); msg != "" {
					report(msg)
				}
			},
		}, nil
	})
}

// args are Gemini CLI's arguments; meshTools says the run has the mesh's
// tools, and with them the approval hook.
func (g *Gemini) args(resume string, meshTools bool) []string {
	args := []string{"-o", "stream-json"}
	switch mode := g.cfg.ApprovalMode; {
	case mode == ApprovalModeMesh && meshTools:
		// The hook asks the mesh before each call; Gemini CLI asks nobody.
		args = append(args, "--approval-mode", "yolo")
	case mode == ApprovalModeMesh:
		// Nobody to ask: Gemini CLI's own default, which runs no tool
		// that needs approval in a headless run.
		args = append(args, "--approval-mode", "default")
	case mode != "":
		args = append(args, "--approval-mode", mode)
	}
	if g.cfg.Model != "" {
		args = append(args, "-m", g.cfg.Model)
	}
	if resume != "" {
		args = append(args, "-r", resume)
	}
	return args
}

// geminiEvent is one line of `gemini -o stream-json`.
type geminiEvent struct {
	Type       string          `json:"type"`
	SessionID  string          `json:"session_id"`
	Model      string          `json:"model"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	Delta      bool            `json:"delta"`
	ToolName   string          `json:"tool_name"`
	Parameters map[string]any  `json:"parameters"`
	Status     string          `json:"status"`
	Severity   string          `json:"severity"`
	Message    string          `json:"message"`
	Stats      json.RawMessage `json:"stats"`
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type geminiParser struct {
	*jsonlReader
	report    func(string)
	text      *textProgress
	passages  []string // assistant text between tool calls
	sessionID string
	model     string
	result    *geminiEvent
	lastError string
}

func newGeminiParser(report func(string)) *geminiParser {
	p := &geminiParser{report: report, text: newTextProgress(report)}
	p.jsonlReader = newJSONLReader(eventsOf(p.handle))
	return p
}

func (p *geminiParser) handle(ev *geminiEvent) {
	switch ev.Type {
	case "init":
		p.sessionID, p.model = ev.SessionID, ev.Model
	case "message":
		if ev.Role == "assistant" {
			if len(p.passages) == 0 {
				p.passages = append(p.passages, "")
			}
			p.passages[len(p.passages)-1] += ev.Content
			p.text.add(ev.Content)
		}
	case "tool_use":
		p.text.reset()
		p.passages = append(p.passages, "")
		p.report(describeTool(ev.ToolName, ev.Parameters))
	case "tool_result":
		if ev.Status == "error" && ev.Error != nil {
			p.report("tool failed: " + ev.Error.Message)
		}
	case "error":
		if ev.Severity != "warning" {
			p.lastError = ev.Message
			p.report("error: " + ev.Message)
		} else {
			p.report("warning: " + ev.Message)
		}
	case "result":
		p.result = ev
	}
}

func (p *geminiParser) outcome(exit error, stderrTail string) (hostOutcome, error) {
	p.finish()
	if p.result != nil && p.result.Status == "error" {
		msg := "reported an error"
		if p.result.Error != nil && p.result.Error.Message != "" {
			msg = p.result.Error.Message
		}
		return hostOutcome{}, exitFailure("gemini", exit, msg, stderrTail)
	}
	if exit != nil {
		var ee *ExitError
		if errors.As(exit, &ee) && geminiExitReasons[ee.Code] != "" {
			return hostOutcome{}, exitFailure("gemini", exit, joinNonEmpty(geminiExitReasons[ee.Code], firstNonEmpty(p.lastError, stderrTail)), "")
		}
		return hostOutcome{}, exitFailure("gemini", exit, p.lastError, stderrTail)
	}
	if p.result == nil {
		return hostOutcome{}, exitFailure("gemini", nil, p.noResult(), stderrTail)
	}
	meta := map[string]any{}
	if s := objectOf(p.result.Stats); s != nil {
		meta["usage"] = s
	}
	if p.model != "" {
		meta["model"] = p.model
	}
	// The json format's "response" is this text run together; passages are
	// kept apart here so that sentences either side of a tool call do not
	// merge.
	return hostOutcome{text: joinParagraphs(p.passages...), sessionID: p.sessionID, metadata: meta, usage: geminiUsage(p.result.Stats, p.model)}, nil
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
