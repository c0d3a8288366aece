package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// OpenAI Codex non-interactive mode, as documented for `codex exec` and its
// JSONL event stream (codex-rs/exec/src/exec_events.rs):
//
//	codex exec --json --skip-git-repo-check -C <dir> -s <sandbox> [-m <model>] [--ephemeral] -
//	codex exec --json --skip-git-repo-check -C <dir> -s <sandbox> [-m <model>] resume <id> -
//
// "-" reads the prompt from stdin. --ephemeral (no session files on disk)
// keeps stateless runs stateless. Codex has no system prompt flag for exec,
// so instructions are prepended to the prompt. Each stdout line is one
// event: thread.started (thread_id: the session to resume), turn.started,
// item.started / item.updated / item.completed (item.type agent_message,
// reasoning, command_execution with command, exit_code and status,
// file_change with changes[].path and kind, mcp_tool_call, web_search,
// todo_list, error), turn.completed (usage), turn.failed (error.message),
// and error (message). Top-level error events include transient notices
// such as "Reconnecting... 1/5", so only turn.failed and the exit status
// decide failure. The answer is the last completed agent_message.
// Credentials: CODEX_API_KEY in the environment (`codex exec` ignores
// OPENAI_API_KEY since 0.1x), or the user's saved `codex login` (which
// `codex login --with-api-key` also writes). The model API's address comes
// from openai_base_url or a model provider in ~/.codex/config.toml.
var codexHost = hostSpec{
	name:        "codex",
	product:     "OpenAI Codex CLI",
	binary:      "codex",
	install:     "install it with `npm install -g @openai/codex`",
	keys:        []string{"CODEX_API_KEY"},
	login:       "or sign in once with `codex login` (a ChatGPT plan works too; `printenv OPENAI_API_KEY | codex login --with-api-key` saves a key)",
	loginFiles:  []string{".codex/auth.json"},
	ignoredKeys: []string{"OPENAI_API_KEY"},
}

// DefaultCodexSandbox lets Codex edit files in the conversation's directory,
// where the outputs folder is, and nothing outside it.
const DefaultCodexSandbox = "workspace-write"

// CodexConfig configures the Codex provider.
type CodexConfig struct {
	HostConfig
	// Sandbox is passed as -s: read-only, workspace-write or
	// danger-full-access. Default DefaultCodexSandbox.
	Sandbox string
	// Model, when set, is passed as -m.
	Model string
	// ApprovalMode ApprovalModeMesh has the mesh decide the host's tool
	// calls through ApproveHook, Codex's PreToolUse hook (codex_approval.go);
	// empty leaves them to the sandbox.
	ApprovalMode string
	// ApproveHook is the command (argv) Codex runs as its PreToolUse hook
	// under ApprovalModeMesh: the adapter's own approve-hook.
	ApproveHook []string
}

// Codex runs each task with `codex exec` in the conversation's directory.
// Commands, file changes and tool calls become progress reports.
type Codex struct {
	cfg  CodexConfig
	host *cliHost
}

// NewCodex checks that Codex is installed. It does not require an API key:
// Codex can use the user's saved login instead.
func NewCodex(cfg CodexConfig) (*Codex, error) {
	if cfg.Sandbox == "" {
		cfg.Sandbox = DefaultCodexSandbox
	}
	switch {
	case cfg.ApprovalMode != "" && cfg.ApprovalMode != ApprovalModeMesh:
		return nil, fmt.Errorf("codex: approval mode %q: only %s is known", cfg.ApprovalMode, ApprovalModeMesh)
	case cfg.ApprovalMode == ApprovalModeMesh && len(cfg.ApproveHook) == 0:
		return nil, fmt.Errorf("codex: approval mode %s needs the approval hook's command", ApprovalModeMesh)
	}
	host, err := newCLIHost(codexHost, cfg.HostConfig)
	if err != nil {
		return nil, err
	}
	return &Codex{cfg: cfg, host: host}, nil
}

// Name returns "codex".
func (c *Codex) Name() string { return codexHost.name }

// Run runs t with Codex and returns when it and everything it started are
// gone.
func (c *Codex) Run(ctx context.Context, t *Task, progress func(Progress)) (*Result, error) {
	return c.host.run(ctx, t, progress, func(resume string, report func(string)) (invocation, error) {
		_, env := codexMCPArgs(t)
		if c.meshHook(t) {
			env = append(env, ToolsURLEnv+"="+t.Request.Tools.MCPURL)
		}
		return invocation{args: c.args(t, resume), env: env, stdin: promptWithContext(t), parser: newCodexParser(report)}, nil
	})
}

func (c *Codex) args(t *Task, resume string) []string {
	args := []string{"exec", "--json", "--skip-git-repo-check", "-C", t.Workdir, "-s", c.cfg.Sandbox}
	if c.cfg.Model != "" {
		args = append(args, "-m", c.cfg.Model)
	}
	tools, _ := codexMCPArgs(t)
	args = append(args, tools...)
	if c.meshHook(t) {
		args = append(args, codexHookArgs(c.cfg.ApproveHook)...)
	}
	if resume != "" {
		return append(args, "resume", resume, "-")
	}
	if c.cfg.Sessions == nil {
		args = append(args, "--ephemeral")
	}
	return append(args, "-")
}

// codexEvent is one line of `codex exec --json`.
type codexEvent struct {
	Type     string          `json:"type"`
	ThreadID string          `json:"thread_id"`
	Message  string          `json:"message"`
	Usage    json.RawMessage `json:"usage"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
	Item *codexItem `json:"item"`
}

type codexItem struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Message  string `json:"message"`
	Command  string `json:"command"`
	ExitCode *int   `json:"exit_code"`
	Status   string `json:"status"`
	Changes  []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Query  string `json:"query"`
	Items  []struct {
		Completed bool `json:"completed"`
	} `json:"items"`
}

type codexParser struct {
	*jsonlReader
	report     func(string)
	threadID   string
	answer     string
	answered   bool
	usage      map[string]any
	rawUsage   json.RawMessage
	turnFailed string
	lastError  string
}

func newCodexParser(report func(string)) *codexParser {
	p := &codexParser{report: report}
	p.jsonlReader = newJSONLReader(eventsOf(p.handle))
	return p
}

func (p *codexParser) handle(ev *codexEvent) {
	switch ev.Type {
	case "thread.started":
		p.threadID = ev.ThreadID
	case "turn.completed":
		p.usage = objectOf(ev.Usage)
		p.rawUsage = ev.Usage
	case "turn.failed":
		p.turnFailed = "the turn failed"
		if ev.Error != nil && ev.Error.Message != "" {
			p.turnFailed = ev.Error.Message
		}
	case "error":
		p.lastError = ev.Message
		p.report(ev.Message)
	case "item.started", "item.updated", "item.completed":
		if ev.Item != nil {
			p.item(ev.Type, ev.Item)
		}
	}
}

func (p *codexParser) item(event string, it *codexItem) {
	done := event == "item.completed"
	switch it.Type {
	case "agent_message":
		if done {
			p.answer, p.answered = it.Text, true
			p.report(sentence(it.Text))
		}
	case "reasoning":
		if done {
			p.report(sentence(it.Text))
		}
	case "command_execution":
		cmd := oneLine(unwrapShell(it.Command), 100)
		switch {
		case event == "item.started":
			p.report("running: " + cmd)
		case done && it.ExitCode != nil && *it.ExitCode != 0:
			p.report(fmt.Sprintf("command failed (exit %d): %s", *it.ExitCode, cmd))
		}
	case "file_change":
		if done && len(it.Changes) > 0 {
			p.report(describeChanges(it.Changes[0].Kind, it.Changes[0].Path, len(it.Changes)))
		}
	case "mcp_tool_call":
		if event == "item.started" {
			p.report("using " + it.Server + "/" + it.Tool)
		}
	case "web_search":
		if event == "item.started" && it.Query != "" {
			p.report("searching the web: " + oneLine(it.Query, 80))
		}
	case "todo_list":
		done := 0
		for _, step := range it.Items {
			if step.Completed {
				done++
			}
		}
		p.report(fmt.Sprintf("plan: %d of %d steps done", done, len(it.Items)))
	case "error":
		p.report("warning: " + it.Message)
	}
}

// describeChanges names the first file a change touched and how many more.
func describeChanges(kind, path string, n int) string {
	verb := map[string]string{"add": "creating", "delete": "deleting"}[kind]
	if verb == "" {
		verb = "editing"
	}
	msg := verb + " " + filepath.Base(path)
	if n > 1 {
		msg += " and " + plural(n-1, "more file")
	}
	return msg
}

func (p *codexParser) outcome(exit error, stderrTail string) (hostOutcome, error) {
	p.finish()
	switch {
	case p.turnFailed != "":
		return hostOutcome{}, exitFailure("codex", exit, p.turnFailed, stderrTail)
	case exit != nil:
		return hostOutcome{}, exitFailure("codex", exit, p.lastError, stderrTail)
	case !p.answered:
		msg := "finished without an answer"
		if g := p.garbage(); g != "" {
			msg += "; " + g
		} else if p.lastError != "" {
			msg += "; last error: " + p.lastError
		}
		return hostOutcome{}, exitFailure("codex", nil, msg, stderrTail)
	}
	meta := map[string]any{}
	if p.usage != nil {
		meta["usage"] = p.usage
	}
	return hostOutcome{text: strings.TrimSpace(p.answer), sessionID: p.threadID, metadata: meta, usage: codexUsage(p.rawUsage)}, nil
}
