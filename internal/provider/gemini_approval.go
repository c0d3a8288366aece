package provider

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2amesh/a2amesh/mesh"
)

// Approvals over the mesh for Gemini CLI (docs/approvals.md). Gemini CLI
// runs the "BeforeTool" hooks of its settings before every tool call,
// ahead of its own approval policy (packages/core/src/scheduler:
// evaluateBeforeToolHook, then checkPolicy): a command hook reads
// {tool_name, tool_input, ...} on stdin and answers {"decision": "allow"}
// or {"decision": "deny", "reason"}, the reason going to the model as the
// tool's error. A hook that fails otherwise (an exit code other than 0 or
// 2, a timeout) is only a warning and the call goes on, so the hook the
// adapter installs always answers, and denies when it cannot ask.
//
// Under GeminiApprovalMesh the adapter starts Gemini CLI with
// --approval-mode yolo, so that Gemini CLI itself asks nobody, and writes
// the hook into the conversation folder's workspace settings beside the
// mesh's tool server: every tool call but those of the mesh's own tools is
// then decided by the agent's approval policy on the platform, or a person.
const (
	// GeminiApprovalMesh is the adapter's approval mode for Gemini CLI in
	// which the mesh decides the host's tool calls.
	GeminiApprovalMesh = "mesh"
	// ToolsURLEnv carries the run's tool server endpoint to the approval
	// hook; the capability comes in capabilityEnv.
	ToolsURLEnv = "A2A_MESH_TOOLS_URL"
	// ToolsCapabilityEnv is capabilityEnv, for the approval hook's command.
	ToolsCapabilityEnv = capabilityEnv
	// geminiHookName names the hook in Gemini CLI's settings and logs.
	geminiHookName = "a2a-mesh-approve"
	// geminiHookMatcher is the hook's tool name pattern (a JavaScript
	// regular expression): every tool but the mesh's own, which Gemini
	// CLI names mcp_<server>_<tool>.
	geminiHookMatcher = "^(?!mcp_" + mcpServerName + "_)"
	// meshApproveTool is the tool server's tool that asks the mesh
	// (toolserver.ApproveTool).
	meshApproveTool = "approve"
)

// geminiHookTimeout is the hook's time limit in Gemini CLI: longer than
// any approval policy's, whose own time limit denies the step first.
var geminiHookTimeout = (mesh.MaxApprovalTimeout + 5*time.Minute).Milliseconds()

// addGeminiApprovalHook adds the approval hook (command hook) to settings,
// keeping the hooks the settings already have.
func addGeminiApprovalHook(settings map[string]any, hook []string, mcpURL string) {
	hooks, _ := settings["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	before, _ := hooks["BeforeTool"].([]any)
	hooks["BeforeTool"] = append(before, map[string]any{
		"matcher": geminiHookMatcher,
		"hooks": []any{map[string]any{
			"type": "command", "name": geminiHookName, "command": shellCommand(hook), "timeout": geminiHookTimeout,
			"description": "asks the agent's approval policy on the A2A Mesh platform before the tool runs",
			// The capability by variable: the file holds no secret.
			"env": map[string]any{ToolsURLEnv: mcpURL, capabilityEnv: "${" + capabilityEnv + "}"},
		}},
	})
	settings["hooks"] = hooks
	// A user who turned hooks off must not turn the mesh's approvals off
	// with them: the host would then run every tool unasked.
	config, _ := settings["hooksConfig"].(map[string]any)
	if config == nil {
		config = map[string]any{}
	}
	config["enabled"] = true
	settings["hooksConfig"] = config
}

// removeGeminiApprovalHook takes the approval hook out of settings and
// reports whether it was there.
func removeGeminiApprovalHook(settings map[string]any) bool {
	hooks, _ := settings["hooks"].(map[string]any)
	before, _ := hooks["BeforeTool"].([]any)
	kept := before[:0:0]
	for _, def := range before {
		if !isGeminiApprovalHook(def) {
			kept = append(kept, def)
		}
	}
	if len(kept) == len(before) {
		return false
	}
	if len(kept) == 0 {
		delete(hooks, "BeforeTool")
	} else {
		hooks["BeforeTool"] = kept
	}
	if len(hooks) == 0 {
		delete(settings, "hooks")
	}
	return true
}

func isGeminiApprovalHook(def any) bool {
	d, _ := def.(map[string]any)
	list, _ := d["hooks"].([]any)
	for _, h := range list {
		if m, _ := h.(map[string]any); m["name"] == geminiHookName {
			return true
		}
	}
	return false
}

// shellCommand quotes argv for the POSIX shell Gemini CLI runs a command
// hook with.
func shellCommand(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}

// GeminiHookConfig is what the approval hook needs: the run's tool server.
type GeminiHookConfig struct {
	// MCPURL is the tool server's endpoint (ToolsURLEnv).
	MCPURL string
	// Capability is the run's tool capability (ToolsCapabilityEnv).
	Capability string
}

// geminiHookInput is the part of a BeforeTool hook's input the mesh needs.
type geminiHookInput struct {
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
}

// geminiHookOutput is a BeforeTool hook's answer.
type geminiHookOutput struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// GeminiApproveHook answers one BeforeTool hook of Gemini CLI: it reads
// the hook's input from in, asks the run's tool server's approve tool,
// and writes the decision to out. Anything that keeps it from asking is
// a deny, with the reason; the error is only for out failing, on which
// the command should exit 2 (Gemini CLI's blocking exit) with the error
// on stderr.
func GeminiApproveHook(ctx context.Context, cfg GeminiHookConfig, in io.Reader, out io.Writer) error {
	answer := askMeshFromGemini(ctx, cfg, in)
	b, err := json.Marshal(answer)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", b)
	return err
}

func askMeshFromGemini(ctx context.Context, cfg GeminiHookConfig, in io.Reader) geminiHookOutput {
	deny := func(reason string) geminiHookOutput {
		return geminiHookOutput{Decision: mesh.ApprovalDeny, Reason: reason}
	}
	var hook geminiHookInput
	if err := json.NewDecoder(io.LimitReader(in, 8<<20)).Decode(&hook); err != nil {
		return deny("the mesh's approval hook could not read the tool call: " + err.Error())
	}
	if hook.ToolName == "" {
		return deny("the mesh's approval hook was given no tool_name")
	}
	if cfg.MCPURL == "" || cfg.Capability == "" {
		return deny("the mesh's approval hook has no tool server to ask (" + ToolsURLEnv + ", " + ToolsCapabilityEnv + ")")
	}
	var input map[string]any
	if len(hook.ToolInput) > 0 && string(hook.ToolInput) != "null" {
		if err := json.Unmarshal(hook.ToolInput, &input); err != nil {
			return deny("the tool call's input is not a JSON object")
		}
	}
	decision, err := askApprove(ctx, cfg, hook.ToolName, input)
	if err != nil {
		return deny("the mesh could not be asked: " + err.Error())
	}
	if decision.Behavior != mesh.ApprovalAllow {
		return deny(cmp.Or(decision.Message, "denied by the agent's approval policy"))
	}
	return geminiHookOutput{Decision: mesh.ApprovalAllow}
}

// approveAnswer is the approve tool's answer (Claude Code's permission
// result shape): behavior allow or deny, and a deny's message.
type approveAnswer struct {
	Behavior string `json:"behavior"`
	Message  string `json:"message"`
}

// askApprove calls the tool server's approve tool, which answers once the
// agent's policy or a person decided (or the policy's time limit passed).
func askApprove(ctx context.Context, cfg GeminiHookConfig, tool string, input map[string]any) (approveAnswer, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "a2a-adapter approve-hook", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   cfg.MCPURL,
		HTTPClient: &http.Client{Transport: headerTransport{headers: map[string]string{"Authorization": "Bearer " + cfg.Capability}, next: http.DefaultTransport}},
		MaxRetries: -1,
	}
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return approveAnswer{}, fmt.Errorf("connect to the run's tool server: %w", err)
	}
	defer session.Close()
	if input == nil {
		input = map[string]any{}
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: meshApproveTool, Arguments: map[string]any{"tool_name": tool, "input": input}})
	if err != nil {
		return approveAnswer{}, err
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	if res.IsError {
		return approveAnswer{}, errors.New(strings.Join(text, " "))
	}
	var answer approveAnswer
	if err := json.Unmarshal([]byte(strings.Join(text, "")), &answer); err != nil {
		return approveAnswer{}, fmt.Errorf("the approve tool's answer is not its JSON: %w", err)
	}
	return answer, nil
}
