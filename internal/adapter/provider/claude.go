package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Claude Code in print mode, as documented in its headless and CLI
// reference pages:
//
//	claude -p --output-format stream-json --verbose [--no-session-persistence | --resume <id>]
//	       [--append-system-prompt <text>] [--permission-mode <mode>] [--allowedTools <list>]
//	       [--max-turns <n>] [--max-budget-usd <usd>] [--model <model>]   < prompt
//
// The prompt goes on stdin, which print mode reads when no prompt argument
// is given, so a long task never meets the command-line limit. stream-json
// (which needs --verbose in print mode) prints one JSON message per line:
// a "system" message with subtype "init" carrying the session_id, then
// "assistant" messages whose content holds text and tool_use blocks, "user"
// messages with tool results, "system" messages with subtype "api_retry"
// (attempt, max_retries, retry_delay_ms, error_status, error) while the API
// is retried, and a final "result" message: subtype "success" or an error
// subtype (error_max_turns, error_max_budget_usd, error_during_execution),
// is_error, result (the answer), session_id, total_cost_usd, usage,
// num_turns, duration_ms. A run that failed may still say subtype "success"
// with is_error true, so both are checked. Credentials: ANTHROPIC_API_KEY or
// CLAUDE_CODE_OAUTH_TOKEN in the environment, or the user's saved login.
var claudeHost = hostSpec{
	name:       "claude",
	product:    "Claude Code",
	binary:     "claude",
	install:    "install it with `npm install -g @anthropic-ai/claude-code`",
	keys:       []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"},
	login:      "or sign in once by running `claude` and using /login (a Claude subscription works too)",
	loginFiles: []string{".claude/.credentials.json"},
}

// ClaudeConfig configures the Claude Code provider.
type ClaudeConfig struct {
	HostConfig
	// PermissionMode is passed as --permission-mode (default, acceptEdits,
	// plan, bypassPermissions, ...). Empty keeps Claude Code's own setting;
	// print mode cannot ask, so a tool needing permission is refused.
	PermissionMode string
	// AllowedTools is passed as --allowedTools, e.g. "Read,Edit,Bash(go test:*)".
	AllowedTools string
	// MaxTurns, when positive, is passed as --max-turns.
	MaxTurns int
	// MaxBudgetUSD, when positive, is passed as --max-budget-usd; a run
	// whose agent's per-run budget leaves it less gets that instead.
	MaxBudgetUSD float64
	// Model, when set, is passed as --model.
	Model string
}

// Claude runs each task with Claude Code in print mode in the
// conversation's directory. Instructions go to --append-system-prompt;
// assistant text, tool calls and API retries become progress reports.
type Claude struct {
	cfg  ClaudeConfig
	host *cliHost
}

// NewClaude checks that Claude Code is installed. It does not require an API
// key: Claude Code can use the user's saved login instead.
func NewClaude(cfg ClaudeConfig) (*Claude, error) {
	host, err := newCLIHost(claudeHost, cfg.HostConfig)
	if err != nil {
		return nil, err
	}
	return &Claude{cfg: cfg, host: host}, nil
}

// Name returns "claude".
func (c *Claude) Name() string { return claudeHost.name }

// Run runs t with Claude Code and returns when it and everything it started
// are gone.
func (c *Claude) Run(ctx context.Context, t *Task, progress func(Progress)) (*Result, error) {
	return c.host.run(ctx, t, progress, func(resume string, report func(string)) (invocation, error) {
		system, prompt := systemText(t), taskPrompt(t)
		if len(system) > maxArgBytes {
			// Instructions too long for an argument travel with the prompt.
			system, prompt = "", promptWithContext(t)
		}
		tools, err := claudeMCPArgs(t)
		if err != nil {
			return invocation{}, err
		}
		args := append(c.args(system, resume, tools != nil), tools...)
		if budget := c.maxBudgetUSD(t); budget > 0 {
			args = append(args, "--max-budget-usd", strconv.FormatFloat(budget, 'f', -1, 64))
		}
		return invocation{args: args, stdin: prompt, parser: newClaudeParser(report)}, nil
	})
}

// maxBudgetUSD is the run's --max-budget-usd, 0 for none: the smaller of
// the adapter's own limit and what the agent's per-run budget leaves the
// run, so that Claude Code stops itself mid-run rather than the platform
// learning of the spending only with the answer.
func (c *Claude) maxBudgetUSD(t *Task) float64 {
	budget := c.cfg.MaxBudgetUSD
	if b := t.Request.Budget; b != nil && b.CostUSD > 0 && (budget <= 0 || b.CostUSD < budget) {
		budget = b.CostUSD
	}
	return budget
}

// args are Claude Code's arguments; with meshTools, the mesh's MCP tools
// are allowed too (print mode cannot ask, and the platform, not the host,
// decides what a delegation may do).
func (c *Claude) args(system, resume string, meshTools bool) []string {
	args := []string{"-p", "--output-format", "stream-json", "--verbose"}
	if resume != "" {
		args = append(args, "--resume", resume)
	} else if c.cfg.Sessions == nil {
		// Stateless (seed 001 §8.1): nothing is left to resume.
		args = append(args, "--no-session-persistence")
	}
	if system != "" {
		args = append(args, "--append-system-prompt", system)
	}
	if c.cfg.PermissionMode != "" {
		args = append(args, "--permission-mode", c.cfg.PermissionMode)
	}
	allowed := c.cfg.AllowedTools
	if meshTools {
		allowed = strings.TrimPrefix(allowed+","+claudeMeshTools, ",")
	}
	if allowed != "" {
		args = append(args, "--allowedTools", allowed)
	}
	if meshTools {
		// A tool that needs permission is asked about through the mesh:
		// the agent's approval policy on the platform, or a person,
		// decides (docs/approvals.md).
		args = append(args, "--permission-prompt-tool", claudeApproveTool)
	}
	if c.cfg.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(c.cfg.MaxTurns))
	}
	if c.cfg.Model != "" {
		args = append(args, "--model", c.cfg.Model)
	}
	return args
}

// claudeMessage is one line of Claude Code's stream-json output.
type claudeMessage struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"`
	Message   struct {
		Content []struct {
			Type  string         `json:"type"`
			Text  string         `json:"text"`
			Name  string         `json:"name"`
			Input map[string]any `json:"input"`
		} `json:"content"`
	} `json:"message"`
	// api_retry
	Attempt      int     `json:"attempt"`
	MaxRetries   int     `json:"max_retries"`
	RetryDelayMS float64 `json:"retry_delay_ms"`
	ErrorStatus  int     `json:"error_status"`
	Error        string  `json:"error"`
	// result
	IsError           bool            `json:"is_error"`
	Result            *string         `json:"result"`
	Errors            []string        `json:"errors"`
	TotalCostUSD      *float64        `json:"total_cost_usd"`
	Usage             json.RawMessage `json:"usage"`
	ModelUsage        json.RawMessage `json:"modelUsage"`
	NumTurns          int             `json:"num_turns"`
	DurationMS        int             `json:"duration_ms"`
	PermissionDenials []any           `json:"permission_denials"`
}

type claudeParser struct {
	*jsonlReader
	report    func(string)
	sessionID string
	model     string
	result    *claudeMessage
}

func newClaudeParser(report func(string)) *claudeParser {
	p := &claudeParser{report: report}
	p.jsonlReader = newJSONLReader(eventsOf(p.handle))
	return p
}

func (p *claudeParser) handle(m *claudeMessage) {
	if m.SessionID != "" {
		p.sessionID = m.SessionID
	}
	switch m.Type {
	case "system":
		p.system(m)
	case "assistant":
		for _, block := range m.Message.Content {
			switch block.Type {
			case "text":
				p.report(sentence(block.Text))
			case "tool_use":
				p.report(describeTool(block.Name, block.Input))
			}
		}
	case "result":
		p.result = m
	}
}

func (p *claudeParser) system(m *claudeMessage) {
	switch m.Subtype {
	case "init":
		p.model = m.Model
	case "api_retry":
		msg := fmt.Sprintf("API retry %d/%d", m.Attempt, m.MaxRetries)
		if reason := strings.TrimSpace(m.Error + " " + statusText(m.ErrorStatus)); reason != "" {
			msg += " (" + reason + ")"
		}
		if m.RetryDelayMS > 0 {
			msg += fmt.Sprintf(", next in %.1fs", m.RetryDelayMS/1000)
		}
		p.report(msg)
	}
}

func statusText(code int) string {
	if code == 0 {
		return ""
	}
	return "HTTP " + strconv.Itoa(code)
}

func (p *claudeParser) outcome(exit error, stderrTail string) (hostOutcome, error) {
	p.finish()
	r := p.result
	if r == nil {
		return hostOutcome{}, exitFailure("claude", exit, msgOrTail(p.noResult(), exit, stderrTail), stderrTail)
	}
	if failed := claudeFailure(r); failed != "" {
		err := exitFailure("claude", exit, failed, stderrTail)
		if r.Subtype == "error_max_budget_usd" {
			usage := claudeUsage(r.Usage, r.TotalCostUSD, p.model)
			if m := claudeModelUsage(r.ModelUsage, r.TotalCostUSD, p.model); usage.Tokens() == 0 && m != nil {
				// Its usage is left at zero then; modelUsage has the counts.
				usage = m
			}
			err = &BudgetError{Err: err, Usage: usage}
		}
		return hostOutcome{}, err
	}
	if exit != nil {
		return hostOutcome{}, exitFailure("claude", exit, "", stderrTail)
	}
	meta := map[string]any{"num_turns": r.NumTurns, "duration_ms": r.DurationMS}
	if r.TotalCostUSD != nil {
		meta["total_cost_usd"] = *r.TotalCostUSD
	}
	if u := objectOf(r.Usage); u != nil {
		meta["usage"] = u
	}
	if p.model != "" {
		meta["model"] = p.model
	}
	if len(r.PermissionDenials) > 0 {
		meta["permission_denials"] = len(r.PermissionDenials)
	}
	text := ""
	if r.Result != nil {
		text = *r.Result
	}
	return hostOutcome{text: text, sessionID: p.sessionID, metadata: meta, usage: claudeUsage(r.Usage, r.TotalCostUSD, p.model)}, nil
}

// claudeFailure says why a result message is a failure, or "" for success.
func claudeFailure(r *claudeMessage) string {
	if !r.IsError && (r.Subtype == "success" || r.Subtype == "") {
		return ""
	}
	text := ""
	if r.Result != nil {
		text = strings.TrimSpace(*r.Result)
	}
	if text == "" && len(r.Errors) > 0 {
		text = strings.Join(r.Errors, "; ")
	}
	switch r.Subtype {
	case "error_max_turns":
		return joinNonEmpty(fmt.Sprintf("stopped at the turn limit after %s (raise --max-turns)", plural(r.NumTurns, "turn")), text)
	case "error_max_budget_usd":
		spent := ""
		if r.TotalCostUSD != nil {
			spent = fmt.Sprintf(" after spending $%.4f", *r.TotalCostUSD)
		}
		return joinNonEmpty("stopped at the budget limit"+spent+" (what the agent's per-run budget left the run, or the adapter's --max-budget-usd)", text)
	case "error_during_execution":
		return joinNonEmpty("failed during execution", text)
	}
	if text == "" {
		text = "reported an error (" + r.Subtype + ")"
	}
	return text
}

func joinNonEmpty(a, b string) string {
	if b == "" {
		return a
	}
	return a + ": " + b
}

// msgOrTail prefers the host's stderr over a generic message when the host
// exited unsuccessfully, since it usually says why.
func msgOrTail(msg string, exit error, stderrTail string) string {
	if exit != nil && stderrTail != "" {
		return ""
	}
	return msg
}
