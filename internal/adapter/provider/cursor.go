package provider

import (
	"context"
	"encoding/json"
	"strings"
)

// Cursor Agent CLI in print mode, as documented in Cursor's CLI parameter
// and output format references:
//
//	cursor-agent -p --output-format stream-json --workspace <dir> --trust [--force]
//	             [--model <model>] [--resume <chat id>] <prompt>
//
// The prompt is the last argument: stdin is not documented as a prompt
// source. Cursor has no system prompt flag, so instructions are prepended
// to the prompt. --trust answers the workspace trust question a new
// directory would otherwise ask, which a headless run cannot. stream-json
// prints one event per line: system (subtype init: session_id, model,
// apiKeySource), user, assistant (a complete message between tool calls:
// message.content[].text), tool_call (subtype started or completed,
// call_id, and tool_call holding one key such as readToolCall,
// writeToolCall, editToolCall, shellToolCall or function with its args and,
// when completed, result), and result (subtype success, is_error, result:
// the whole answer, session_id, duration_ms). A failed run exits non-zero,
// writes its error to stderr and may end without a result event.
// Credentials: CURSOR_API_KEY in the environment, or `cursor-agent login`.
var cursorHost = hostSpec{
	name:    "cursor",
	product: "Cursor Agent CLI",
	binary:  "cursor-agent",
	install: "install it with `curl https://cursor.com/install -fsS | bash`",
	keys:    []string{"CURSOR_API_KEY"},
	login:   "or sign in once with `cursor-agent login`",
}

// CursorConfig configures the Cursor provider.
type CursorConfig struct {
	HostConfig
	// Force passes --force: commands run without asking, unless denied by
	// the Cursor permission configuration. Without it a headless run cannot
	// run commands that need approval.
	Force bool
	// Model, when set, is passed as --model.
	Model string
}

// Cursor runs each task with the Cursor Agent CLI in print mode, with the
// conversation's directory as workspace. Assistant messages and tool calls
// become progress reports.
type Cursor struct {
	cfg  CursorConfig
	host *cliHost
}

// NewCursor checks that the Cursor Agent CLI is installed. It does not
// require an API key: the CLI can use the user's saved login instead.
func NewCursor(cfg CursorConfig) (*Cursor, error) {
	host, err := newCLIHost(cursorHost, cfg.HostConfig)
	if err != nil {
		return nil, err
	}
	return &Cursor{cfg: cfg, host: host}, nil
}

// Name returns "cursor".
func (c *Cursor) Name() string { return cursorHost.name }

// Run runs t with the Cursor Agent CLI and returns when it and everything
// it started are gone.
func (c *Cursor) Run(ctx context.Context, t *Task, progress func(Progress)) (*Result, error) {
	return c.host.run(ctx, t, progress, func(resume string, report func(string)) (invocation, error) {
		prompt, err := argPrompt(promptWithContext(t))
		if err != nil {
			return invocation{}, err
		}
		return invocation{args: c.args(t, resume, prompt), parser: newCursorParser(report)}, nil
	})
}

func (c *Cursor) args(t *Task, resume, prompt string) []string {
	args := []string{"-p", "--output-format", "stream-json", "--workspace", t.Workdir, "--trust"}
	if c.cfg.Force {
		args = append(args, "--force")
	}
	if c.cfg.Model != "" {
		args = append(args, "--model", c.cfg.Model)
	}
	if resume != "" {
		args = append(args, "--resume", resume)
	}
	return append(args, prompt)
}

// cursorEvent is one line of `cursor-agent --output-format stream-json`.
type cursorEvent struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"`
	Message   struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"message"`
	ToolCall   map[string]json.RawMessage `json:"tool_call"`
	IsError    bool                       `json:"is_error"`
	Result     *string                    `json:"result"`
	DurationMS int                        `json:"duration_ms"`
}

type cursorParser struct {
	*jsonlReader
	report    func(string)
	sessionID string
	model     string
	result    *cursorEvent
}

func newCursorParser(report func(string)) *cursorParser {
	p := &cursorParser{report: report}
	p.jsonlReader = newJSONLReader(eventsOf(p.handle))
	return p
}

func (p *cursorParser) handle(ev *cursorEvent) {
	if ev.SessionID != "" {
		p.sessionID = ev.SessionID
	}
	switch ev.Type {
	case "system":
		if ev.Model != "" {
			p.model = ev.Model
		}
	case "assistant":
		for _, block := range ev.Message.Content {
			if block.Type == "text" || block.Type == "" {
				p.report(sentence(block.Text))
			}
		}
	case "tool_call":
		p.toolCall(ev.Subtype, ev.ToolCall)
	case "result":
		p.result = ev
	}
}

// toolCall reports a started tool call, and a completed one that failed.
// The call is an object with one key naming the tool (readToolCall) or
// "function" with a name and JSON arguments.
func (p *cursorParser) toolCall(subtype string, call map[string]json.RawMessage) {
	for key, raw := range call {
		var c struct {
			Args      map[string]any `json:"args"`
			Name      string         `json:"name"`
			Arguments string         `json:"arguments"`
			Result    struct {
				Error *struct {
					Message string `json:"errorMessage"`
				} `json:"error"`
			} `json:"result"`
		}
		_ = json.Unmarshal(raw, &c)
		name, args := strings.TrimSuffix(key, "ToolCall"), c.Args
		if key == "function" {
			name = c.Name
			_ = json.Unmarshal([]byte(c.Arguments), &args)
		}
		switch {
		case subtype == "started":
			p.report(describeTool(name, args))
		case subtype == "completed" && c.Result.Error != nil:
			p.report("tool failed: " + name + ": " + c.Result.Error.Message)
		}
		return
	}
}

func (p *cursorParser) outcome(exit error, stderrTail string) (hostOutcome, error) {
	p.finish()
	r := p.result
	if r != nil && r.IsError {
		msg := "reported an error"
		if r.Result != nil && strings.TrimSpace(*r.Result) != "" {
			msg = strings.TrimSpace(*r.Result)
		}
		return hostOutcome{}, exitFailure("cursor-agent", exit, msg, stderrTail)
	}
	if exit != nil {
		return hostOutcome{}, exitFailure("cursor-agent", exit, "", stderrTail)
	}
	if r == nil || r.Result == nil {
		return hostOutcome{}, exitFailure("cursor-agent", nil, p.noResult(), stderrTail)
	}
	meta := map[string]any{"duration_ms": r.DurationMS}
	if p.model != "" {
		meta["model"] = p.model
	}
	return hostOutcome{text: strings.TrimSpace(*r.Result), sessionID: p.sessionID, metadata: meta}, nil
}
