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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2amesh/a2amesh/internal/httpheader"
	"github.com/a2amesh/a2amesh/mesh"
)

// HookConfig is what the approval hook needs: the run's tool server.
type HookConfig struct {
	// MCPURL is the tool server's endpoint (ToolsURLEnv).
	MCPURL string
	// Capability is the run's tool capability (ToolsCapabilityEnv).
	Capability string
}

// The approval hook (a2a-adapter approve-hook) is the command a host runs
// before a tool call under ApprovalModeMesh: Gemini CLI's BeforeTool hook
// and Codex's PreToolUse hook (docs/adapter.md, "Approvals"). Both give
// it {hook_event_name, tool_name, tool_input, ...} on stdin; it asks the
// run's tool server's approve tool and answers in the host's shape.
// Anything that keeps it from asking is a deny, with the reason.

const (
	// ApprovalModeMesh is the adapter's approval mode (Gemini CLI, Codex)
	// in which the mesh decides the host's tool calls through the hook.
	ApprovalModeMesh = "mesh"
	// ToolsURLEnv carries the run's tool server endpoint to the approval
	// hook; the capability comes in capabilityEnv.
	ToolsURLEnv = "A2A_MESH_TOOLS_URL"
	// ToolsCapabilityEnv is capabilityEnv, for the approval hook's command.
	ToolsCapabilityEnv = capabilityEnv
	// meshApproveTool is the tool server's tool that asks the mesh
	// (toolserver.ApproveTool).
	meshApproveTool = "approve"
)

// hookEventPreToolUse is Codex's (and Claude Code's) hook event before a
// tool call; any other event is answered in Gemini CLI's shape.
const hookEventPreToolUse = "PreToolUse"

// hookInput is the part of a host's hook input the mesh needs.
type hookInput struct {
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	// ToolUseID is the host's id of the call (Codex); Gemini CLI has none.
	ToolUseID string `json:"tool_use_id"`
}

// geminiHookOutput is a BeforeTool hook's answer.
type geminiHookOutput struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// preToolUseOutput is a PreToolUse hook's answer: a deny with its reason,
// or nothing (the call goes on under the host's own settings).
type preToolUseOutput struct {
	HookSpecificOutput *preToolUseDecision `json:"hookSpecificOutput,omitempty"`
}

type preToolUseDecision struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason"`
}

// hookVerdict is the mesh's answer to one hook: allow, or deny with why.
type hookVerdict struct {
	allow  bool
	reason string
}

// ApproveHook answers one hook of a host (Gemini CLI's BeforeTool,
// Codex's PreToolUse): it reads the hook's input from in, asks the run's
// tool server's approve tool, and writes the decision to out in the
// host's shape. The error is only for out failing, on which the command
// should exit 2 (both hosts' blocking exit) with the error on stderr.
func ApproveHook(ctx context.Context, cfg HookConfig, in io.Reader, out io.Writer) error {
	var hook hookInput
	readErr := json.NewDecoder(io.LimitReader(in, 8<<20)).Decode(&hook)
	var verdict hookVerdict
	if readErr != nil {
		verdict = hookVerdict{reason: "the mesh's approval hook could not read the tool call: " + readErr.Error()}
	} else {
		verdict = askMesh(ctx, cfg, &hook)
	}
	var answer any = geminiHookOutput{Decision: mesh.ApprovalAllow}
	switch {
	case hook.HookEventName == hookEventPreToolUse && verdict.allow:
		answer = preToolUseOutput{}
	case hook.HookEventName == hookEventPreToolUse:
		answer = preToolUseOutput{HookSpecificOutput: &preToolUseDecision{HookEventName: hookEventPreToolUse,
			PermissionDecision: mesh.ApprovalDeny, PermissionDecisionReason: verdict.reason}}
	case !verdict.allow:
		answer = geminiHookOutput{Decision: mesh.ApprovalDeny, Reason: verdict.reason}
	}
	b, err := json.Marshal(answer)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", b)
	return err
}

// askMesh asks the run's tool server about the hook's tool call. The
// mesh's own tools are the platform's to decide (delegation rules), as
// with the other hosts: they go on unasked.
func askMesh(ctx context.Context, cfg HookConfig, hook *hookInput) hookVerdict {
	deny := func(reason string) hookVerdict { return hookVerdict{reason: reason} }
	if hook.ToolName == "" {
		return deny("the mesh's approval hook was given no tool_name")
	}
	if strings.HasPrefix(hook.ToolName, claudeMeshTools+"__") {
		return hookVerdict{allow: true}
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
	decision, err := askApprove(ctx, cfg, hook, input)
	if err != nil {
		return deny("the mesh could not be asked: " + err.Error())
	}
	if decision.Behavior != mesh.ApprovalAllow {
		return deny(cmp.Or(decision.Message, "denied by the agent's approval policy"))
	}
	return hookVerdict{allow: true}
}

// approveAnswer is the approve tool's answer (Claude Code's permission
// result shape): behavior allow or deny, and a deny's message.
type approveAnswer struct {
	Behavior string `json:"behavior"`
	Message  string `json:"message"`
}

// askApprove calls the tool server's approve tool, which answers once the
// agent's policy or a person decided (or the policy's time limit passed).
func askApprove(ctx context.Context, cfg HookConfig, hook *hookInput, input map[string]any) (approveAnswer, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "a2a-adapter approve-hook", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   cfg.MCPURL,
		HTTPClient: &http.Client{Transport: httpheader.Transport{Header: map[string]string{"Authorization": "Bearer " + cfg.Capability}, Next: http.DefaultTransport}},
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
	args := map[string]any{"tool_name": hook.ToolName, "input": input}
	if hook.ToolUseID != "" {
		args["tool_use_id"] = hook.ToolUseID
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: meshApproveTool, Arguments: args})
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
