package provider

import (
	"strings"
	"time"

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
// Under ApprovalModeMesh the adapter starts Gemini CLI with
// --approval-mode yolo, so that Gemini CLI itself asks nobody, and writes
// the hook into the conversation folder's workspace settings beside the
// mesh's tool server: every tool call but those of the mesh's own tools is
// then decided by the agent's approval policy on the platform, or a person.
const (
	// geminiHookName names the hook in Gemini CLI's settings and logs.
	geminiHookName = "a2a-mesh-approve"
	// geminiHookMatcher is the hook's tool name pattern (a JavaScript
	// regular expression): every tool but the mesh's own, which Gemini
	// CLI names mcp_<server>_<tool>.
	geminiHookMatcher = "^(?!mcp_" + mcpServerName + "_)"
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
